"""Make bertviz's HTML render with no network: inline d3 + jQuery, replace require.js by a shim.

bertviz's views start with ``<script src=".../require.min.js">`` and then call
``require.config({paths: {d3: <CDN>, jquery: <CDN>}})`` and ``requirejs(['jquery', 'd3'], cb)``.
Offline that draws nothing. Here the CDN tag is dropped, d3 v5.7 and jQuery are inlined (read at
run time from the installed PyPI packages ``mpld3`` and ``XStatic-jQuery``; no JS is copied into
this repository), and a shim defines ``require``/``requirejs`` that call ``cb(jQuery, d3)``
synchronously. Real require.js is not used: it conflicts with d3's anonymous ``define``.
"""

from __future__ import annotations

import functools
import html
import importlib.util
import re
from pathlib import Path

from engine.records import EngineError

#: where each library lives inside its installed package (package, relative path)
D3_SOURCE = ("mpld3", "js/d3.v5.min.js")
JQUERY_SOURCE = ("xstatic.pkg.jquery", "data/jquery.min.js")

#: stands in for require.js: hands the globals set by the inlined libraries to bertviz's callback
SHIM_JS = """
(function () {
  var modules = function () { return {jquery: window.jQuery, d3: window.d3}; };
  var req = function (deps, callback) {
    var found = modules();
    callback.apply(window, deps.map(function (name) { return found[name]; }));
  };
  req.config = function () {};
  window.require = req;
  window.requirejs = req;
})();
""".strip()
SHIM_MARKER = "/* attention-playground: require shim */"

_CDN_SCRIPT = re.compile(r"<script[^>]*\bsrc=\"https?://[^\"]*\"[^>]*>\s*</script>", re.IGNORECASE)


def package_file(package: str, relative: str) -> Path:
    """A data file of an installed package, found without importing it (mpld3 imports matplotlib)."""
    top = package.split(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        raise EngineError(f"The package '{top}' is not installed: run `pip install -r requirements.txt`.")
    for base in spec.submodule_search_locations:
        path = Path(base, *package.split(".")[1:], relative)
        if path.is_file():
            return path
    raise EngineError(f"'{relative}' was not found in the installed package '{package}'.")


@functools.lru_cache(maxsize=None)
def library_js(name: str) -> str:
    """The text of ``"d3"`` or ``"jquery"`` as shipped by its package (read once per process)."""
    package, relative = {"d3": D3_SOURCE, "jquery": JQUERY_SOURCE}[name]
    text = package_file(package, relative).read_text(encoding="utf-8")
    if "</script" in text.lower():  # would end the inline <script> early
        raise EngineError(f"{name} cannot be inlined: it contains '</script'.")
    return text


def script_safe(js: str) -> str:
    """Escape sequences that would end or confuse an inline ``<script>`` (``</``, ``<!--``).

    Only valid where they occur inside JS string literals (the JSON payload): ``"<\\/"`` and
    ``"<\\!--"`` read back as ``"</"`` and ``"<!--"``. bertviz's own code contains neither.
    """
    return js.replace("</", "<\\/").replace("<!--", "<\\!--")


def offline_document(body: str, *, title: str, extra_css: str = "") -> str:
    """A complete HTML page: inlined d3 + jQuery + the require shim, then ``body``.

    Args:
        body: bertviz's HTML (its CDN ``<script src>`` tags are removed here).
        title: the document title.
        extra_css: CSS added to the page's ``<style>``.

    Returns:
        HTML with no ``http(s)://`` script or stylesheet source.
    """
    body = _CDN_SCRIPT.sub("", body)
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title>"
        "<style>body{margin:0;padding:4px;background:#fff;color:#202020;"
        "font-family:'Helvetica Neue',Helvetica,Arial,sans-serif;}" + extra_css + "</style>"
        f"<script>{library_js('d3')}</script>\n"
        f"<script>{library_js('jquery')}</script>\n"
        f"<script>{SHIM_MARKER}\n{SHIM_JS}</script>\n"
        "</head><body>" + body + "</body></html>"
    )
