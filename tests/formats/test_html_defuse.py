"""The defuser: nothing in a stored page runs, and nothing loads, CSS included.

The load attempts are counted in headless Chromium (every request routed, counted, refused):
the hostile page as it is tries dozens of loads; defused, it tries none.
"""

from __future__ import annotations

import re

import pytest

from ingest.formats.html.defuse import defused_html, neutralise_css
from ingest.formats.html.layout import CHROMIUM, CHROMIUM_ARGS, browser_unavailable

CSS_CASES = {
    "url": ("a{background:url(x.png)}", "a{background:none}"),
    "quoted url": ("a{background:url( 'x.png' ) red}", "a{background:none red}"),
    "escaped function name": ("a{background:\\75 rl(x.png)}", "a{background:none}"),
    "escaped, uppercase": ("a{background:U\\52L(x.png)}", "a{background:none}"),
    "image-set with strings": ('a{background:image-set("x.png" 1x,"y.png" 2x)}', "a{background:none}"),
    "-webkit-image-set": ("a{background:-webkit-image-set(url(x.png) 1x)}", "a{background:none}"),
    "import string": ('@import "x.css";a{color:red}', "a{color:red}"),
    "import url with media": ("@import url(x.css) screen;a{}", "a{}"),
    "escaped import": ('@\\69mport "x.css";a{}', "a{}"),
    "font-face": ("@font-face{font-family:f;src:url(f.woff2) format('woff2'),local(F)}",
                  "@font-face{font-family:f;src:none format('woff2'),local(F)}"),
    "unterminated url": ("a{background:url(x.png", "a{background:none"),
    "url with parenthesis in a string": ('a{background:url("x).png")}', "a{background:none}"),
    "same-document reference kept": ("a{fill:url(#grad);mask:url('#m')}", "a{fill:url(#grad);mask:url('#m')}"),
    "strings untouched": ('a::after{content:"url(x.png) @import"}', 'a::after{content:"url(x.png) @import"}'),
    "comments untouched": ("/* url(x.png) */a{}", "/* url(x.png) */a{}"),
    "not a url function": ("a{width:calc(1px + 2px)} b{background:myurl(x)}", "a{width:calc(1px + 2px)} b{background:myurl(x)}"),
    "cross-fade": ("a{background:cross-fade(url(a.png),url(b.png),50%)}", "a{background:none}"),
}


@pytest.mark.parametrize("case", CSS_CASES, ids=CSS_CASES)
def test_css_loses_what_it_would_load_and_keeps_the_rest(case):
    css, expected = CSS_CASES[case]
    assert neutralise_css(css) == expected


def test_css_neutralising_is_linear_on_a_huge_inline_image():
    css = "a{background:url(data:image/png;base64," + "A" * 2_000_000 + ")}" + "b{}" * 1000
    assert neutralise_css(css) == "a{background:none}" + "b{}" * 1000


HOSTILE = """<!DOCTYPE html><html><head>
<link rel="stylesheet" href="/l/sheet.css"><script src="/l/script.js"></script>
<meta http-equiv="refresh" content="0;url=/l/refresh.html">
<style>
@import url(/l/import1.css); @import "/l/import2.css"; @\\69mport "/l/import3.css";
body{background:url(/l/body.png)}
@font-face{font-family:Evil;src:url(/l/font.woff2) format("woff2")}
.f{font-family:Evil}
.i{background-image:image-set("/l/set.png" 1x)}
.w{background-image:-webkit-image-set(url(/l/wset.png) 1x)}
.c{cursor:url(/l/cursor.cur),auto}
.s{list-style-image:url(/l/bullet.png)}
.b{border:10px solid;border-image:url(/l/border.png) 30}
.m{-webkit-mask-image:url(/l/mask.png);mask-image:url(/l/mask2.png)}
.n::before{content:url(/l/content.png)}
.e{background:\\75 rl(/l/escaped.png)}
.x{background:url(/l/unterminated.png)
</style></head>
<body background="/l/bodyattr.png">
<p class="f">font</p><p class="i">set</p><p class="w">wset</p><p class="c">cursor</p>
<ul class="s"><li>item</li></ul><p class="b">border</p><p class="m">mask</p><p class="n">content</p>
<p class="e">escaped</p><p class="x">unterminated</p>
<p style="background:url(/l/inline.png)">inline</p>
<p style="background-image:image-set('/l/inline-set.png' 1x)">inline set</p>
<p style="background:url&#40;/l/entity.png)">entity in an attribute</p>
<img src="/l/img.png" srcset="/l/img2x.png 2x"><video poster="/l/poster.png"></video>
<input type="image" src="/l/input.png"><object data="/l/object.bin"></object><embed src="/l/embed.bin">
<iframe src="/l/frame.html"></iframe><picture><source srcset="/l/source.png"><img src="/l/pic.png"></picture>
<table background="/l/table.png"><tr><td>cell</td></tr></table>
<svg width="100" height="100"><style>@import url(/l/svgimport.css); rect{fill:url(/l/paint.svg#g)}</style>
<style>circle{fill:url&#40;/l/svgentity.svg#g)}</style>
<image href="/l/svgimage.png" width="10" height="10"/><use href="/l/use.svg#x"/>
<filter id="f"><feImage href="/l/feimage.png"/></filter><rect width="5" height="5" fill="url(/l/attr.svg#p)"/>
<circle r="3"/><a href="/l/link.html"><text y="20">link</text></a></svg>
<a href="/l/plain-link.html">a link is followed only on a click</a>
</body></html>"""


def _load_attempts(markup: str) -> list[str]:
    """The URLs Chromium tries to load for ``markup`` (scripts off, every request refused)."""
    from playwright.sync_api import sync_playwright

    attempts: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS))
        try:
            context = browser.new_context(java_script_enabled=False)

            def route(route):
                if route.request.url == "http://page.test/":
                    route.fulfill(status=200, content_type="text/html; charset=utf-8", body=markup)
                else:
                    attempts.append(route.request.url)
                    route.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.goto("http://page.test/", wait_until="load")
            page.wait_for_timeout(300)  # fonts and late style loads
            page.mouse.move(50, 50)  # cursors load on hover
            page.wait_for_timeout(200)
        finally:
            browser.close()
    return attempts


@pytest.mark.browser
def test_a_defused_page_makes_no_load_attempt_where_the_page_itself_makes_many():
    reason = browser_unavailable()
    if reason is not None:
        pytest.skip(reason)
    before = _load_attempts(HOSTILE)
    after = _load_attempts(defused_html(HOSTILE))
    loaded = {url.rsplit("/l/", 1)[-1] for url in before}
    # The test page does try what it is meant to (so that the count after means something).
    assert {"sheet.css", "import1.css", "import2.css", "body.png", "set.png", "inline.png", "img.png",
            "svgimport.css", "svgimage.png"} <= loaded, sorted(loaded)
    assert after == [], after
    print(f"\nload attempts: {len(before)} as stored, {len(after)} defused")


def test_the_defused_page_has_no_active_or_loading_markup_left():
    out = defused_html(HOSTILE)
    assert "/l/" not in out.replace('href="/l/plain-link.html"', "").replace('href="/l/link.html"', "")
    assert not re.search(r"<(script|link|meta|iframe|object|embed)\b", out, re.I)
    assert "@import" not in out.lower()
