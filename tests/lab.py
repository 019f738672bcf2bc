"""A laboratory site for the harness's own tests: pages that record the input they receive."""

from webeval.benchmarks.local.site_server import Response, Site

site = Site("lab", "Lab")

_LOG_SCRIPT = """
<script>
window.events = [];
const log = (e) => window.events.push({type: e.type, x: e.clientX, y: e.clientY, key: e.key, button: e.button});
for (const t of ['click', 'dblclick', 'contextmenu', 'mousedown', 'mouseup', 'keydown']) document.addEventListener(t, log);
document.addEventListener('mousemove', (e) => { window.lastMove = [e.clientX, e.clientY]; });
document.addEventListener('contextmenu', (e) => e.preventDefault());
</script>
"""


def _bare(title: str, body: str, style: str = "") -> str:
    return (f"<!doctype html><html><head><meta charset=utf-8><title>{title}</title>"
            f"<style>body{{margin:0;font-family:sans-serif}}{style}</style></head><body>{body}</body></html>")


@site.route("/input")
def input_page(req):
    return _bare("Input", f"""
      <input id=field type=text style="position:absolute;left:100px;top:100px;width:600px;font-size:20px">
      <textarea id=box style="position:absolute;left:100px;top:200px;width:600px;height:100px"></textarea>
      <div id=target style="position:absolute;left:800px;top:100px;width:200px;height:200px;background:#0a0"></div>
      <div style="position:absolute;top:3000px">bottom</div>{_LOG_SCRIPT}""")


@site.route("/color/(?P<color>[a-z]+)")
def color(req):
    return _bare(req.params["color"], "", f"html,body{{background:{req.params['color']};height:100%}}")


@site.route("/popup")
def popup(req):
    return _bare("Popup", "<a id=open href='/lab/color/red' target=_blank "
                          "style='display:block;width:400px;height:100px;font-size:40px'>open</a>")


@site.route("/cookie")
def cookie(req):
    return Response(
        _bare("Cookie", "<p id=seen></p><script>localStorage.setItem('k', 'v');"
                        "document.getElementById('seen').textContent = document.cookie;</script>"),
        headers={"Set-Cookie": "visited=yes; Path=/"},
    )


@site.route("/probe")
def probe(req):
    return _bare("Probe", "<p id=out></p><script>document.getElementById('out').textContent = JSON.stringify("
                          "{cookie: document.cookie, storage: localStorage.getItem('k'), history: history.length});"
                          "</script>")


@site.route("/dialog")
def dialog(req):
    return _bare("Dialog", "<button id=b style='width:300px;height:100px' onclick=\"alert('hello there');"
                           "document.getElementById('after').textContent='after'\">go</button><p id=after></p>")


@site.route("/select")
def select(req):
    options = "".join(f"<option>{fruit}</option>" for fruit in ("apple", "banana", "cherry"))
    return _bare("Select", f"<select id=s style='font-size:30px;width:300px'>{options}</select>")


@site.route("/download")
def download(req):
    return _bare("Download", "<a id=dl href='/lab/file.txt' style='font-size:40px'>get the file</a>")


@site.route("/file.txt")
def file(req):
    return Response("the file's content", content_type="text/plain",
                    headers={"Content-Disposition": "attachment; filename=report.txt"})


@site.route("/slow")
def slow(req):
    return _bare("Slow", """<button id=b style='width:300px;height:100px'>load</button><p id=out>before</p>
      <script>document.getElementById('b').onclick = () => fetch('/lab/slow-data').then(r => r.text())
        .then(t => { document.body.style.background = 'rgb(0, 0, 255)'; document.getElementById('out').textContent = t; });
      </script>""")


@site.route("/slow-data")
def slow_data(req):
    return Response("after", content_type="text/plain", delay_s=0.3)


@site.route("/hog")
def hog(req):
    """A page that, two seconds after it loads, takes memory (32 MB a tick, touched so it is really used) until the
    kernel stops it."""
    return _bare("Hog", "<p id=held>0</p><script>window.kept = []; setTimeout(() => setInterval(() => {"
                        "const block = new Uint8Array(32 << 20); for (let i = 0; i < block.length; i += 4096) "
                        "block[i] = 1; window.kept.push(block);"
                        "document.getElementById('held').textContent = window.kept.length * 32 + ' MB'; }, 50), 2000);"
                        "</script>")
