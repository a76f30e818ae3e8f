/* vjpgrad's additions to the furo theme's pages: what CSS alone cannot do. */
(function () {
  "use strict";

  // Sphinx marks each caption of the sidebar's table of contents role="heading" without a level,
  // which a screen reader needs to place it: they are the sidebar's section headings, level 2.
  function captionLevels() {
    document.querySelectorAll('[role="heading"]:not([aria-level])').forEach(function (el) {
      el.setAttribute("aria-level", "2");
    });
  }

  // Code, outputs and tables never wrap (a wrapped line of code reads as a dedent, a wrapped text
  // picture breaks): one wider than the column scrolls sideways. It says so with a shadow on its
  // right edge (vjpgrad.css), and it can be reached with Tab and scrolled with the arrow keys.
  var WIDE = [
    [".highlight pre", "code, scrolls sideways"],
    [".table-wrapper", "table, scrolls sideways"],
    ["table.vjp-matrix", "matrix, scrolls sideways"],
  ];
  function marked(el, label) {
    var scrolls = el.scrollWidth > el.clientWidth + 1;
    el.classList.toggle("vjp-scrolls", scrolls);
    if (scrolls && !el.hasAttribute("tabindex")) {
      el.setAttribute("tabindex", "0");
      el.setAttribute("data-vjp-scroller", "");
      if (el.tagName !== "TABLE") { el.setAttribute("role", "region"); }
      el.setAttribute("aria-label", label);
    } else if (!scrolls && el.hasAttribute("data-vjp-scroller")) {
      ["tabindex", "data-vjp-scroller", "role", "aria-label"].forEach(function (name) { el.removeAttribute(name); });
    }
  }
  function wide() {
    WIDE.forEach(function (pair) {
      document.querySelectorAll(pair[0]).forEach(function (el) {
        if (!el.closest(".vjs-root")) { marked(el, pair[1]); }  // the stepper marks its own boxes
      });
    });
  }

  function all() { captionLevels(); wide(); }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", all); } else { all(); }
  window.addEventListener("load", wide);
  window.addEventListener("resize", wide);
}());
