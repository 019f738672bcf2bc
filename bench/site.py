"""A bench site served next to the offline sites: a blank page to click on, and a page that redraws late."""

from __future__ import annotations

from webeval.benchmarks.local.site_server import Response, Site, load_sites

site = Site("bench", "Bench")

_PAGE = ("<!doctype html><html><head><meta charset=utf-8><title>{title}</title>"
         "<style>body{{margin:0;font-family:sans-serif}}</style></head><body>{body}</body></html>")


@site.route("/blank")
def blank(req):
    return _PAGE.format(title="Blank", body="")


@site.route("/slow")
def slow(req):
    # The click starts a request answered after 300 ms; only then does the page redraw (blue, "after").
    return _PAGE.format(title="Slow", body="""<button id=b style='width:300px;height:100px'>load</button>
      <p id=out>before</p><script>document.getElementById('b').onclick = () => fetch('/bench/slow-data')
        .then(r => r.text()).then(t => { document.body.style.background = 'rgb(0, 0, 255)';
                                        document.getElementById('out').textContent = t; });</script>""")


@site.route("/slow-data")
def slow_data(req):
    return Response("after", content_type="text/plain", delay_s=0.3)


def all_sites() -> dict[str, Site]:
    return {**load_sites(), "bench": site}
