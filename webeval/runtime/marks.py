"""The interactive elements of the active page with their screen boxes, for set-of-marks prompting.

Only what a person could act on now: visible, inside the viewport (the part that is on screen), and not hidden under
another element at its centre. Page pixels are screen pixels (the session places every window so), so a box can be
clicked as it is.
"""

from __future__ import annotations

from playwright.async_api import Error as PlaywrightError

from webeval.actions import Element
from webeval.runtime.session import TaskSession

_INTERACTIVE = ", ".join([
    "a[href]", "button", "input:not([type=hidden])", "textarea", "select", "summary", "[contenteditable='']",
    "[contenteditable=true]", "[onclick]", "[tabindex]:not([tabindex='-1'])",
    *(f"[role={role}]" for role in ("button", "link", "checkbox", "radio", "tab", "menuitem", "option", "switch",
                                    "combobox", "textbox", "searchbox", "slider")),
])

_SCRIPT = """
(selector) => {
  const W = window.innerWidth, H = window.innerHeight;
  const out = [];
  const clean = (s) => (s || "").replace(/\\s+/g, " ").trim();
  for (const el of document.querySelectorAll(selector)) {
    const style = getComputedStyle(el);
    if (style.visibility === "hidden" || style.display === "none" || parseFloat(style.opacity) === 0) continue;
    const r = el.getBoundingClientRect();
    const left = Math.max(0, r.left), top = Math.max(0, r.top);
    const right = Math.min(W, r.right), bottom = Math.min(H, r.bottom);
    if (right - left < 2 || bottom - top < 2) continue;
    const cx = (left + right) / 2, cy = (top + bottom) / 2;
    const hit = document.elementFromPoint(cx, cy);
    if (!hit || !(hit === el || el.contains(hit) || (el.labels && [...el.labels].some((l) => l.contains(hit))))) continue;
    const tag = el.tagName.toLowerCase();
    const kind = tag === "input" ? (el.getAttribute("type") || "text") : (el.getAttribute("role") || "");
    let text = clean(el.innerText);
    if (!text && (tag === "input" || tag === "textarea"))
      text = clean(["button", "submit", "reset"].includes(el.type) ? el.value : el.placeholder);
    if (!text) text = clean(el.getAttribute("aria-label") || el.getAttribute("title") || el.getAttribute("alt"));
    if (!text) { const img = el.querySelector("img[alt]"); if (img) text = clean(img.alt); }
    out.push({tag, kind, text: text.slice(0, 120), x: left, y: top, width: right - left, height: bottom - top});
  }
  return out;
}
"""


async def interactive_elements(session: TaskSession) -> list[Element]:
    """The active page's interactive elements in document order; none when the page cannot be read right now."""
    page = session.require_active()
    try:
        found = await page.evaluate(_SCRIPT, _INTERACTIVE)
    except PlaywrightError:
        return []  # a page between documents: the model sees the screenshot without labels this step
    return [Element(**item) for item in found]
