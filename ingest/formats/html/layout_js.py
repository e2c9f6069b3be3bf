"""The scripts the layout stage runs in the page, through Playwright's ``evaluate``.

The page's own scripts are off (and the defuser removed them); these run in the
page through the DevTools protocol, which still works with scripting disabled.
They only read: the text nodes next to the source markers, the rectangles of
single characters, and the computed styles that decide whether a reader sees them.
"""

from __future__ import annotations

# Text nodes in tree order, each with the source range of the marker comment that claims it
# (or -1, -1), and the markers that claimed no text node (the browser moved their text). A
# marker claims the text node right after it; formatting elements the parser reconstructed
# around the text (`<p><b>x<p>y`: a new <b> around "y") may stand between them.
COLLECT = r"""
() => {
  const MARK = /^(\d+):(\d+)$/;
  const SKIP = new Set(["STYLE", "SCRIPT", "TITLE", "NOSCRIPT"]);
  const FORMATTING = new Set(["A", "B", "BIG", "CODE", "EM", "FONT", "I", "NOBR", "S", "SMALL", "STRIKE", "STRONG", "TT", "U"]);
  const nodes = [], entries = [], claims = new Map();
  const walker = document.createTreeWalker(document, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_COMMENT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.nodeType === Node.COMMENT_NODE) {
      const m = MARK.exec(n.data);
      if (!m) continue;
      let text = n.nextSibling;
      while (text && text.nodeType === Node.ELEMENT_NODE && FORMATTING.has(text.tagName)) text = text.firstChild;
      if (text && text.nodeType === Node.TEXT_NODE && !claims.has(text)) claims.set(text, [+m[1], +m[2]]);
      else entries.push([-1, +m[1], +m[2], ""]);
      continue;
    }
    const parent = n.parentNode;
    if (parent && parent.nodeType === Node.ELEMENT_NODE && SKIP.has(parent.tagName)) continue;
    const mark = claims.get(n);
    nodes.push(n);
    entries.push([nodes.length - 1, mark ? mark[0] : -1, mark ? mark[1] : -1, n.data]);
  }
  window.__spanindexNodes = nodes;
  const root = document.scrollingElement || document.documentElement;
  // One string: Playwright's own serialisation of a large array costs seconds.
  return JSON.stringify({entries, width: Math.max(root.scrollWidth, document.documentElement.scrollWidth),
                         height: Math.max(root.scrollHeight, document.documentElement.scrollHeight)});
}
"""

# Per requested character (node, UTF-16 start, end; int32, base64): its first non-empty client rectangle in
# document coordinates (NaN where the browser laid out nothing). Per requested node: what its
# element's computed style says about visibility (see ``NODE_FIELDS`` in ingest.formats.html.boxes).
MEASURE = r"""
(req) => {
  const nodes = window.__spanindexNodes;
  const sx = window.scrollX, sy = window.scrollY;
  const unb64 = (s) => { const b = atob(s), u = new Uint8Array(b.length); for (let i = 0; i < b.length; i++) u[i] = b.charCodeAt(i); return new Int32Array(u.buffer); };
  const chars = unb64(req.chars), n = chars.length / 3;
  const wanted = unb64(req.nodes);
  const boxes = new Float32Array(4 * n);
  const range = document.createRange();
  for (let i = 0; i < n; i++) {
    const node = nodes[chars[3 * i]];
    range.setStart(node, chars[3 * i + 1]);
    range.setEnd(node, chars[3 * i + 2]);
    const rects = range.getClientRects();
    let r = null;
    for (let k = 0; k < rects.length; k++) {
      if (rects[k].width > 0 && rects[k].height > 0) { r = rects[k]; break; }
    }
    if (!r && rects.length) r = rects[0];
    if (r) {
      boxes[4 * i] = r.left + sx; boxes[4 * i + 1] = r.top + sy;
      boxes[4 * i + 2] = r.right + sx; boxes[4 * i + 3] = r.bottom + sy;
    } else {
      boxes.fill(NaN, 4 * i, 4 * i + 4);
    }
  }

  const INF = 1e9, FULL = [-INF, -INF, INF, INF];
  const infos = new Map(), clips = new Map();
  const rgba = (s) => {
    const m = /^rgba?\(([\d.]+)[, ]+([\d.]+)[, ]+([\d.]+)(?:[,/ ]+([\d.]+)(%?))?\)$/.exec(s || "");
    if (!m) return null;
    let a = m[4] === undefined ? 1 : +m[4];
    if (m[5]) a /= 100;
    return [+m[1], +m[2], +m[3], a];
  };
  const over = (top, under) => {  // top composited over an opaque colour
    const a = top[3];
    return [top[0] * a + under[0] * (1 - a), top[1] * a + under[1] * (1 - a), top[2] * a + under[2] * (1 - a), 1];
  };
  const luminance = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const meet = (a, b) => [Math.max(a[0], b[0]), Math.max(a[1], b[1]), Math.min(a[2], b[2]), Math.min(a[3], b[3])];
  const boxOf = (el) => { const r = el.getBoundingClientRect(); return [r.left + sx, r.top + sy, r.right + sx, r.bottom + sy]; };
  const length = (v, whole) => v.endsWith("%") ? parseFloat(v) / 100 * whole : parseFloat(v) || 0;
  const isRoot = (el) => el === document.documentElement || el === document.body;

  // The rectangle that clips an element's own content: its overflow, its `clip`, its clip-path.
  const ownClip = (el, cs) => {
    if (isRoot(el)) return FULL;
    let clip = FULL;
    const hx = /hidden|clip/.test(cs.overflowX), hy = /hidden|clip/.test(cs.overflowY);
    if (hx || hy) {
      const b = boxOf(el);
      clip = [hx ? b[0] : -INF, hy ? b[1] : -INF, hx ? b[2] : INF, hy ? b[3] : INF];
    }
    if (cs.clip && cs.clip.startsWith("rect(") && /absolute|fixed/.test(cs.position)) {
      const b = boxOf(el);
      const p = cs.clip.slice(5, -1).split(/[, ]+/);
      const edge = (v, base, auto) => v === "auto" ? auto : base + parseFloat(v);
      clip = meet(clip, [edge(p[3], b[0], -INF), edge(p[0], b[1], -INF), edge(p[1], b[0], INF), edge(p[2], b[1], INF)]);
    }
    const path = cs.clipPath || "none";
    if (path.startsWith("inset(")) {
      const b = boxOf(el), w = b[2] - b[0], h = b[3] - b[1];
      const p = path.slice(6, -1).split(" round ")[0].trim().split(/\s+/);
      const t = p[0], r = p[1] || t, bt = p[2] || t, l = p[3] || r;
      clip = meet(clip, [b[0] + length(l, w), b[1] + length(t, h), b[2] - length(r, w), b[3] - length(bt, h)]);
    } else if (/^(circle|ellipse)\(0(px|%)?[ )]/.test(path)) {
      clip = [0, 0, 0, 0];
    }
    return clip;
  };
  // The clip that applies to what is inside `el`: its own, and that of its containing blocks.
  const clipInside = (el) => {
    if (clips.has(el)) return clips.get(el);
    const cs = getComputedStyle(el);
    let result = ownClip(el, cs);
    let up = null;
    if (cs.position === "fixed") up = null;
    else if (cs.position === "absolute") {
      up = el.parentElement;
      while (up && !isRoot(up)) {
        const ucs = getComputedStyle(up);
        if (ucs.position !== "static" || ucs.transform !== "none") break;
        up = up.parentElement;
      }
    } else up = el.parentElement;
    if (up) result = meet(result, clipInside(up));
    clips.set(el, result);
    return result;
  };
  // The nearest box the reader can scroll, if any: content beyond the page inside it is reachable.
  const info = (el) => {
    if (infos.has(el)) return infos.get(el);
    const cs = getComputedStyle(el);
    const parent = el.parentElement ? info(el.parentElement) : null;
    const own = rgba(cs.backgroundColor) || [0, 0, 0, 0];
    let bg;
    if (cs.backgroundImage !== "none") bg = null;
    else if (!parent) bg = own[3] > 0 ? over(own, [255, 255, 255]) : [255, 255, 255, 1];
    else if (own[3] >= 1) bg = own;
    else bg = parent.bg && (own[3] > 0 ? over(own, parent.bg) : parent.bg);
    const details = el.parentElement && el.parentElement.tagName === "DETAILS" && !el.parentElement.open && el.tagName !== "SUMMARY";
    const control = ["SELECT", "DATALIST", "TEXTAREA"].includes(el.tagName);
    const scrolls = !isRoot(el) && (/auto|scroll/.test(cs.overflowX) || /auto|scroll/.test(cs.overflowY));
    const result = {
      cs, bg,
      opacity: (parent ? parent.opacity : 1) * parseFloat(cs.opacity),
      aria: (parent && parent.aria) || el.getAttribute("aria-hidden") === "true",
      // the closed <details> or the form control whose content the reader opens to see
      revealer: (parent && parent.revealer) || (details ? el.parentElement : control ? el : null),
      painted: (parent && parent.painted) || /text/.test(cs.backgroundClip || "") || /text/.test(cs.webkitBackgroundClip || ""),
      scroller: scrolls ? boxOf(el) : (parent ? parent.scroller : null),
    };
    infos.set(el, result);
    return result;
  };

  const K = req.fields;
  const out = new Float32Array(K * wanted.length);
  wanted.forEach((index, j) => {
    const node = nodes[index];
    const el = node.parentElement;
    const o = K * j;
    if (!el) { out.fill(NaN, o, o + K); return; }
    const i = info(el), cs = i.cs;
    let flags = 0;
    let boxed = i.revealer || (el.tagName === "DETAILS" && !el.open ? el : null);
    if (boxed) flags |= 2;  // hidden only if the control or <details> itself is
    else boxed = el;
    // display:contents has no box of its own: ask the nearest element that has one
    while (boxed.parentElement && getComputedStyle(boxed).display === "contents") boxed = boxed.parentElement;
    if (!boxed.checkVisibility()) flags |= 1;
    if (cs.visibility !== "visible") flags |= 4;
    if (i.aria) flags |= 8;
    let fill = rgba(cs.webkitTextFillColor) || rgba(cs.color) || [0, 0, 0, 1];
    const stroke = parseFloat(cs.webkitTextStrokeWidth) > 0 && (rgba(cs.webkitTextStrokeColor) || [0, 0, 0, 0])[3] > 0;
    if (i.painted || stroke || cs.textShadow !== "none") flags |= 16;  // drawn some other way
    const alpha = fill[3] * i.opacity;
    let contrast = -1;
    if (i.bg) {
      const shown = over([fill[0], fill[1], fill[2], alpha], i.bg);
      const a = luminance(shown), b = luminance(i.bg);
      contrast = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    }
    const clip = clipInside(el);
    const sc = i.scroller || [NaN, NaN, NaN, NaN];
    out.set([flags, parseFloat(cs.fontSize), alpha, contrast, clip[0], clip[1], clip[2], clip[3], sc[0], sc[1], sc[2], sc[3]], o);
  });

  const b64 = (array) => {
    const bytes = new Uint8Array(array.buffer);
    let s = "";
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(s);
  };
  return {boxes: b64(boxes), nodes: b64(out)};
}
"""

# The browser's own hit test at given document points (x, y, the node expected there): the
# text node and UTF-16 offset the caret lands on (-1 where it lands on no collected text
# node), and whether another element lies on top at that point. The view scrolls a page
# (the viewport's height) at a time, as the boxes were measured at scroll 0.
HIT_TEST = r"""
(points) => {
  const nodes = window.__spanindexNodes;
  const index = new Map(nodes.map((n, i) => [n, i]));
  const out = [];
  for (let i = 0; i < points.length; i += 3) {
    const x = points[i], y = points[i + 1], want = nodes[points[i + 2]].parentElement;
    window.scrollTo(Math.floor(x / innerWidth) * innerWidth, Math.floor(y / innerHeight) * innerHeight);
    const vx = x - window.scrollX, vy = y - window.scrollY;
    const range = document.caretRangeFromPoint(vx, vy);
    const top = document.elementFromPoint(vx, vy);
    const covered = !(top && (top === want || top.contains(want) || want.contains(top)));
    if (!range || !index.has(range.startContainer)) out.push(-1, -1, covered ? 1 : 0);
    else out.push(index.get(range.startContainer), range.startOffset, covered ? 1 : 0);
  }
  window.scrollTo(0, 0);
  return JSON.stringify(out);
}
"""
