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

  // Centre `el` in its nearest scrolling box only: the rest of the page stays put.
  function centre(el) {
    var box = scroller(el);
    var r = el.getBoundingClientRect();
    if (box) {
      var b = box.getBoundingClientRect();
      box.scrollTop += (r.top - b.top) - (b.height - r.height) / 2;
      box.scrollLeft += Math.min(0, r.left - b.left - 16);
    } else if (r.top < 0 || r.bottom > window.innerHeight) {
      window.scrollBy(0, r.top - (window.innerHeight - r.height) / 2);
    }
  }

  function centreInFrame(frame) {
    var doc = frame.contentDocument;
    var hit = doc && doc.getElementById("spanindex-hit");
    if (!hit) return;
    var win = frame.contentWindow;
    var r = hit.getBoundingClientRect();
    win.scrollTo(win.scrollX + Math.min(0, r.left - 16), win.scrollY + r.top - (win.innerHeight - r.height) / 2);
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

  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a[data-view]") : null;
    if (link && openView(link.dataset.view)) {
      event.preventDefault();
      history.replaceState(null, "", "#" + link.dataset.view);
      if (event.detail > 0) link.blur();  // a mouse click: the popup has done its work
    }
  });
  document.addEventListener("keydown", function (event) {
    var el = document.activeElement;
    if (event.key === "Escape" && el && el.classList.contains("cite")) el.blur();
  });

  document.querySelectorAll(".view.open").forEach(activate);
  if (location.hash.length > 1) openView(decodeURIComponent(location.hash.slice(1)));
})();
