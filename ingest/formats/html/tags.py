"""The HTML standard's element vocabulary, as far as visible text is concerned.

Which elements separate blocks (and how strongly), which hide their content,
which are void, preformatted, or close an open paragraph, and the scopes the
tree builder in ``ingest.formats.html.parser`` needs for its implicit closes.
"""

from __future__ import annotations

from ingest.formats.html.text import LINE, PARAGRAPH

SEPARATOR = {
    **dict.fromkeys(
        "p h1 h2 h3 h4 h5 h6 pre listing xmp plaintext blockquote table ul ol dl menu dir "
        "figure section article header footer main nav aside hr form address".split(),
        PARAGRAPH,
    ),
    **dict.fromkeys(
        "div li dt dd tr caption figcaption option optgroup details summary center fieldset "
        "legend hgroup dialog search frameset".split(),
        LINE,
    ),
}
HIDDEN = frozenset(
    "head script style template noscript title noembed noframes iframe datalist rp "
    "annotation annotation-xml audio video canvas desc".split()
)
# Elements the tokenizer reads as raw text and the builder never opens.
SKIPPED_RAW = frozenset("script style noscript iframe noembed noframes title".split())
PREFORMATTED = frozenset("pre listing textarea xmp plaintext".split())
DROPS_FIRST_NEWLINE = frozenset("pre listing textarea".split())
VOID = frozenset(
    "area base basefont bgsound br col embed frame hr image img input keygen link meta "
    "param source track wbr".split()
)
IN_HEAD = frozenset(
    "base basefont bgsound link meta title noscript noframes style script template head".split()
)
CLOSES_P = frozenset(
    "address article aside blockquote center details dialog dir div dl fieldset figcaption "
    "figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr main menu nav ol p pre listing "
    "search section summary table ul li dd dt plaintext xmp".split()
)
HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
FORMATTING = frozenset("a b big code em font i nobr s small strike strong tt u".split())
SPECIAL = frozenset(
    "address applet area article aside base basefont bgsound blockquote body br button caption "
    "center col colgroup dd details dir div dl dt embed fieldset figcaption figure footer form "
    "frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html iframe img input keygen li "
    "link listing main marquee menu meta nav noembed noframes noscript object ol p param "
    "plaintext pre script search section select source style summary table tbody td template "
    "textarea tfoot th thead title tr track ul wbr xmp".split()
)
SCOPE = frozenset("applet caption html table td th marquee object template".split())
BUTTON_SCOPE = SCOPE | {"button"}
LIST_SCOPE = SCOPE | {"ol", "ul"}
TABLE_SCOPE = frozenset({"html", "table", "template"})
ROW_GROUPS = frozenset({"tbody", "thead", "tfoot"})
# Start tags that close or open something beyond themselves.
STRUCTURAL = CLOSES_P | ROW_GROUPS | frozenset(
    "html body head li dd dt td th tr option optgroup svg math".split()
)
# Start tags that end foreign (SVG, MathML) content.
BREAKOUT = frozenset(
    "b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i "
    "img li listing menu meta nobr ol p pre ruby s small span strong strike sub sup table tt "
    "u ul var".split()
)
