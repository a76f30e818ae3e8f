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
      var count = 0;
      document.querySelectorAll(pair[0]).forEach(function (el) {
        if (el.closest(".vjs-root")) { return; }  // the stepper marks its own boxes
        // each region named apart from the others (a screen reader's list of them, axe-core's
        // landmark-unique): "code 3, scrolls sideways"
        marked(el, pair[1].replace(",", " " + (count + 1) + ","));
        if (el.hasAttribute("data-vjp-scroller")) { count += 1; }
      });
    });
  }

  // furo's two asides, named: a screen reader lists them apart (axe-core's landmark-unique).
  function asideNames() {
    [[".sidebar-drawer", "the site's pages"], [".toc-drawer", "on this page"]].forEach(function (pair) {
      var el = document.querySelector(pair[0]);
      if (el && !el.hasAttribute("aria-label")) { el.setAttribute("aria-label", pair[1]); }
    });
  }

  // furo's drawers (the site's pages under 63em, "On this page" under 82em) open when a label for
  // a hidden checkbox is clicked, and a label takes no focus. Each label becomes a button (its
  // classes and icon kept, so furo places and shows it as before) that opens and closes its
  // drawer from the mouse or the keyboard. From the keyboard the focus goes into the drawer, and
  // Escape, or the focus leaving the drawer, closes it; Escape puts the focus back on the button.
  // vjpgrad.css hides a closed drawer, so Tab skips its links.
  var DRAWERS = [
    ["__navigation", ".sidebar-drawer", "label.nav-overlay-icon", "the site's pages"],
    ["__toc", ".toc-drawer", "label.toc-overlay-icon", "on this page"],
  ];
  function focusable(root) {
    var found = root.querySelectorAll("a[href], input:not([type=hidden]), button, [tabindex]");
    return Array.prototype.filter.call(found, function (el) { return el.getClientRects().length > 0; })[0];
  }
  function drawers() {
    DRAWERS.forEach(function (parts) {
      var box = document.getElementById(parts[0]), drawer = document.querySelector(parts[1]);
      if (!box || !drawer) { return; }
      drawer.id = drawer.id || "vjp-drawer-" + parts[0].slice(2);
      var opener = null, buttons = [];
      function shown() {
        buttons.forEach(function (b) { b.setAttribute("aria-expanded", box.checked ? "true" : "false"); });
      }
      function close(back) {
        if (!box.checked) { return; }
        box.checked = false;
        shown();
        if (back && opener) { opener.focus(); }
      }
      document.querySelectorAll(parts[2]).forEach(function (label) {
        var button = document.createElement("button");
        button.type = "button";
        button.className = label.className;
        button.innerHTML = label.innerHTML;
        button.setAttribute("aria-label", "Show " + parts[3]);
        button.setAttribute("aria-controls", drawer.id);
        label.replaceWith(button);
        buttons.push(button);
        button.addEventListener("click", function (event) {
          opener = button;
          box.checked = !box.checked;
          shown();
          var first = box.checked && event.detail === 0 ? focusable(drawer) : null;  // 0: Enter or Space
          if (first) { first.focus(); }
        });
      });
      box.addEventListener("change", shown);  // furo's overlay, clicked, closes the drawer
      drawer.addEventListener("keydown", function (event) {
        if (event.key === "Escape" && box.checked) { event.preventDefault(); close(true); }
      });
      drawer.addEventListener("focusout", function (event) {
        if (event.relatedTarget && !drawer.contains(event.relatedTarget)) { close(false); }
      });
      shown();
    });
  }

  // JupyterLab breaks an output's lines anywhere (word-break: break-all): in a console as narrow
  // as a phone's, "gradient" became "gradi" and "ent". The console's frame is the site's own: its
  // outputs break between words, and inside a word only where one word is wider than the line.
  function wordsKept(frame) {
    try {
      var page = frame.contentDocument;
      if (!page || !page.head || page.getElementById("vjpgrad-words")) { return; }
      var style = page.createElement("style");
      style.id = "vjpgrad-words";
      // before JupyterLab's own styles, which its code adds later: the more specific rule wins
      style.textContent = "html body .jp-OutputArea-output pre { word-break: normal; overflow-wrap: anywhere; }";
      page.head.appendChild(style);
    } catch (error) { /* a frame of another origin: left as it is */ }
  }

  // Start here's console starts when its box is clicked (jupyterlite-sphinx): its button is made
  // one the keyboard reaches and presses, and the frame that comes says what it holds and takes
  // the focus, so the keyboard goes on into the console.
  function consoles() {
    document.querySelectorAll(".jupyterlite_sphinx_try_it_button").forEach(function (button) {
      var box = button.parentElement;
      button.setAttribute("role", "button");
      button.setAttribute("tabindex", "0");
      function started() {
        var frame = box.querySelector("iframe");
        if (frame) {
          frame.addEventListener("load", function () { wordsKept(frame); });
          wordsKept(frame);
          frame.title = "Python console (JupyterLite): " + button.textContent.trim();
          frame.focus();
          box.removeAttribute("onclick");  // a second click on its edge would add a second console
          box.style.cursor = "auto";
        }
      }
      button.addEventListener("keydown", function (event) {
        if (event.key !== "Enter" && event.key !== " ") { return; }
        event.preventDefault();
        if (!box.querySelector("iframe")) { box.click(); }
        started();
      });
      box.addEventListener("click", function () { window.setTimeout(started, 0); });
    });
  }

  function all() { captionLevels(); asideNames(); drawers(); consoles(); wide(); }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", all); } else { all(); }
  window.addEventListener("load", wide);
  window.addEventListener("resize", wide);
}());
