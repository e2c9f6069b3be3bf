/* spanindex viewer: opens a citation's source at its highlight.
   No network, no eval, no HTML built from strings: views are rendered (escaped) by
   the server or the report; this only shows them, loads their images and frames,
   and scrolls the highlight into view. */
(function () {
  "use strict";
  var imageData = document.getElementById("spanindex-page-images");
  var images = imageData ? JSON.parse(imageData.textContent) : {};
  var sourceData = document.getElementById("spanindex-html-sources");
  var sources = sourceData ? JSON.parse(sourceData.textContent) : {};  // one marked copy per page
  var current = null;

  function scroller(el) {
    for (var p = el.parentElement; p; p = p.parentElement) {
      var overflow = getComputedStyle(p).overflowY;
      if ((overflow === "auto" || overflow === "scroll") && p.scrollHeight > p.clientHeight) return p;
    }
    return null;
  }

  // What the window shows of `box` (the window itself when null), less the view header stuck at its top.
  function visibleArea(box, view) {
    var top = 0, bottom = window.innerHeight;
    if (box) {
      var b = box.getBoundingClientRect();
      top = Math.max(top, b.top + box.clientTop);
      bottom = Math.min(bottom, b.top + box.clientTop + box.clientHeight);
    }
    var head = view && view.querySelector(".view-head");
    if (head && getComputedStyle(head).position === "sticky") top = Math.max(top, head.getBoundingClientRect().bottom);
    return {top: top, bottom: bottom};
  }

  // Centre the rectangle `where()` gives (window coordinates) in what `anchor`'s scrolling box
  // shows below the view header; then, if the window does not show it, scroll the window too.
  function reveal(anchor, where) {
    var view = anchor.closest(".view");
    var box = scroller(anchor);
    (box ? [box, null] : [null]).forEach(function (b) {
      var area = visibleArea(b, view), r = where();
      if (!b && r.top >= area.top && r.bottom <= area.bottom) return;
      var delta = r.top - (area.top + Math.max(0, (area.bottom - area.top - (r.bottom - r.top)) / 2));
      if (b) b.scrollTop += delta; else window.scrollBy(0, delta);
    });
  }

  function centre(el) {
    reveal(el, function () { return el.getBoundingClientRect(); });
  }

  // Centre the first mark inside the frame's own page; then, unless the view shows the span on
  // page images (whose boxes come first), bring the mark into the window.
  function centreInFrame(frame) {
    var doc = frame.contentDocument;
    var hit = doc && doc.getElementById("spanindex-hit");
    if (!hit) return;
    var win = frame.contentWindow;
    var r = hit.getBoundingClientRect();
    var x = (r.left < 0 || r.right > win.innerWidth) ? win.scrollX + r.left - 16 : win.scrollX;
    win.scrollTo(x, win.scrollY + r.top - (win.innerHeight - r.height) / 2);
    var view = frame.closest(".view");
    if (view && view.querySelector(".page .hl")) return;
    reveal(frame, function () {
      var f = frame.getBoundingClientRect(), m = hit.getBoundingClientRect();
      return {top: f.top + frame.clientTop + m.top, bottom: f.top + frame.clientTop + m.bottom};
    });
  }

  // A shared copy of a page: switch on this citation's marks; the first becomes the hit.
  function showCitation(frame) {
    var doc = frame.contentDocument;
    if (!doc) return;
    var key = frame.dataset.cite, first = null;
    doc.querySelectorAll("mark[data-cite]").forEach(function (m) {
      var on = m.dataset.cite.split(" ").indexOf(key) >= 0;
      m.classList.toggle("on", on);
      m.removeAttribute("id");
      if (on && !first) first = m;
    });
    if (first) first.id = "spanindex-hit";
    centreInFrame(frame);
  }

  function activate(view) {
    view.querySelectorAll("img[data-src], img[data-src-ref]").forEach(function (img) {
      if (!img.getAttribute("src")) img.setAttribute("src", img.dataset.src || images[img.dataset.srcRef] || "");
    });
    // A frame carries its own page (data-srcdoc) or names a shared copy (data-srcdoc-ref).
    view.querySelectorAll("iframe[data-srcdoc], iframe[data-srcdoc-ref]").forEach(function (frame) {
      var shared = "srcdocRef" in frame.dataset;
      var show = shared ? showCitation : centreInFrame;
      if (frame.hasAttribute("srcdoc")) { show(frame); return; }
      frame.addEventListener("load", function () { show(frame); });
      frame.srcdoc = shared ? (sources[frame.dataset.srcdocRef] || "") : frame.dataset.srcdoc;
    });
    var hit = view.querySelector(".hl");
    if (hit) centre(hit);
  }

  function openView(id) {
    var view = document.getElementById(id);
    if (!view || !view.classList.contains("view")) return false;
    if (current && current !== view) current.hidden = true;
    view.hidden = false;
    current = view;
    var empty = document.querySelector(".panel-empty");
    if (empty) empty.hidden = true;
    document.querySelectorAll("a.cite.active").forEach(function (a) { a.classList.remove("active"); });
    document.querySelectorAll("a.cite[data-view]").forEach(function (a) {
      if (a.dataset.view === id) a.classList.add("active");
    });
    var panel = view.closest(".panel");
    if (panel) panel.scrollTop = 0;
    activate(view);
    return true;
  }

  // A popup has done its work once its citation is opened: it stays closed until the pointer
  // (or the focus) leaves its marker, so it never covers the start of the highlight.
  function closePopup(link) {
    var wrap = link.closest(".cite-wrap");
    if (!wrap) return;
    wrap.classList.add("closed");
    var reopen = function () {
      wrap.classList.remove("closed");
      wrap.removeEventListener("mouseleave", reopen);
      wrap.removeEventListener("focusout", reopen);
    };
    wrap.addEventListener("mouseleave", reopen);
    if (wrap.contains(document.activeElement)) wrap.addEventListener("focusout", reopen);  // opened by keyboard
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a[data-view]") : null;
    if (link && openView(link.dataset.view)) {
      event.preventDefault();
      history.replaceState(null, "", "#" + link.dataset.view);
      if (event.detail > 0) link.blur();  // a mouse click
      closePopup(link);
    }
  });
  document.addEventListener("keydown", function (event) {
    var el = document.activeElement;
    if (event.key === "Escape" && el && el.classList.contains("cite")) el.blur();
  });

  document.querySelectorAll(".view.open").forEach(activate);
  if (location.hash.length > 1) openView(decodeURIComponent(location.hash.slice(1)));
})();
