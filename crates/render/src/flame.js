// Interactivity for cpiflame's SVG flame graphs: hover details, click-to-zoom, regex search.
//
// The SVG carries everything this needs: the #frames group holds the layout constants in
// data-* attributes, and every frame is a <g data-s data-n> (left edge and width in width units: summed cycles periods)
// holding a <title> (first line = the frame name), a <rect> and a <text> label. Positions are
// recomputed from the sample counts, so zooming never accumulates rounding error.
(function () {
  "use strict";

  var doc = document;
  var root = doc.getElementById("frames");
  if (!root) {
    return;
  }
  var details = doc.getElementById("details");
  var matched = doc.getElementById("matched");
  var resetButton = doc.getElementById("reset");
  var searchButton = doc.getElementById("search");

  var xpad = Number(root.getAttribute("data-xpad"));
  var span = Number(root.getAttribute("data-span"));
  var total = Number(root.getAttribute("data-total"));
  var charWidth = Number(root.getAttribute("data-char"));
  var labelPad = Number(root.getAttribute("data-pad"));
  var inverted = root.getAttribute("data-inverted") === "1";
  var searchFill = "#e600e6";

  // Gather the frames once.
  var frames = [];
  var groups = root.getElementsByTagName("g");
  for (var i = 0; i < groups.length; i++) {
    var g = groups[i];
    if (!g.hasAttribute("data-s")) {
      continue;
    }
    var rect = g.getElementsByTagName("rect")[0];
    var text = g.getElementsByTagName("text")[0];
    var title = g.getElementsByTagName("title")[0];
    var info = title ? title.textContent : "";
    g.setAttribute("data-i", String(frames.length));
    frames.push({
      g: g,
      rect: rect,
      text: text,
      s: Number(g.getAttribute("data-s")),
      n: Number(g.getAttribute("data-n")),
      y: Number(rect.getAttribute("y")),
      name: info.split("\n")[0],
      info: info,
      fill: rect.getAttribute("fill")
    });
  }

  // The same rule as the Rust side: whole name, or its start and "..", or nothing.
  function fitLabel(name, width) {
    var fit = Math.floor((width - 2 * labelPad) / charWidth);
    if (!(fit >= 3)) {
      return "";
    }
    var chars = Array.from(name);
    if (chars.length <= fit) {
      return name;
    }
    return chars.slice(0, fit - 2).join("") + "..";
  }

  function place(f, x, width) {
    f.rect.setAttribute("x", x.toFixed(2));
    f.rect.setAttribute("width", width.toFixed(2));
    if (f.text) {
      f.text.setAttribute("x", (x + labelPad).toFixed(2));
      f.text.textContent = fitLabel(f.name, width);
    }
  }

  // The hover and search lines run along the bottom of the image: where the browser
  // measures one wider than the frames' span, it is cut and ends with "..".
  function showLine(node, text) {
    node.textContent = text;
    if (!(node.getComputedTextLength() > span)) {
      return;
    }
    var chars = Array.from(text);
    var lo = 0;
    var hi = chars.length;
    while (lo < hi) {
      var mid = Math.ceil((lo + hi) / 2);
      node.textContent = chars.slice(0, mid).join("") + "..";
      if (node.getComputedTextLength() <= span) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    node.textContent = chars.slice(0, lo).join("") + "..";
  }

  function frameOf(node) {
    while (node && node !== root) {
      if (node.getAttribute && node.getAttribute("data-i") !== null) {
        return frames[Number(node.getAttribute("data-i"))];
      }
      node = node.parentNode;
    }
    return null;
  }

  // Is frame a nearer the root than frame b? Rows are drawn bottom-up unless inverted.
  function shallower(a, b) {
    return inverted ? a.y < b.y : a.y > b.y;
  }

  // Zoom: the clicked frame fills the width, its descendants are rescaled with it, its
  // ancestors are stretched across the full width (faded), every other frame is hidden.
  function zoom(z) {
    var k = span / z.n;
    var zEnd = z.s + z.n;
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i];
      var end = f.s + f.n;
      if (f === z || (f.s >= z.s && end <= zEnd && shallower(z, f))) {
        f.g.removeAttribute("display");
        f.g.classList.remove("anc");
        place(f, xpad + (f.s - z.s) * k, f.n * k);
      } else if (f.s <= z.s && end >= zEnd && shallower(f, z)) {
        f.g.removeAttribute("display");
        f.g.classList.add("anc");
        place(f, xpad, span);
      } else {
        f.g.setAttribute("display", "none");
      }
    }
    resetButton.setAttribute("visibility", "visible");
  }

  function resetZoom() {
    var k = span / total;
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i];
      f.g.removeAttribute("display");
      f.g.classList.remove("anc");
      place(f, xpad + f.s * k, f.n * k);
    }
    resetButton.setAttribute("visibility", "hidden");
  }

  // Search: highlight frames whose name matches, report the share of the width (all cycles) they cover
  // (nested matches are counted once).
  var currentSearch = "";

  function clearSearch() {
    for (var i = 0; i < frames.length; i++) {
      frames[i].rect.setAttribute("fill", frames[i].fill);
    }
    currentSearch = "";
    matched.textContent = " ";
    searchButton.textContent = "Search";
  }

  function search(term) {
    clearSearch();
    if (!term) {
      return;
    }
    var re;
    try {
      re = new RegExp(term, "i");
    } catch (e) {
      alert("Not a valid regular expression: " + e.message);
      return;
    }
    var hits = [];
    for (var i = 0; i < frames.length; i++) {
      var f = frames[i];
      if (re.test(f.name)) {
        f.rect.setAttribute("fill", searchFill);
        hits.push([f.s, f.s + f.n]);
      }
    }
    hits.sort(function (a, b) {
      return a[0] - b[0] || b[1] - a[1];
    });
    var covered = 0;
    var reach = -1;
    for (var j = 0; j < hits.length; j++) {
      var lo = Math.max(hits[j][0], reach);
      if (hits[j][1] > lo) {
        covered += hits[j][1] - lo;
        reach = hits[j][1];
      }
    }
    currentSearch = term;
    searchButton.textContent = "Clear search";
    var share = total > 0 ? (100 * covered) / total : 0;
    showLine(matched, "Matched /" + term + "/: " + hits.length + " frame(s), " + share.toFixed(2) + "% of the width");
  }

  function askSearch() {
    var term = prompt("Search frames (regular expression, case-insensitive):", currentSearch);
    if (term !== null) {
      search(term);
    }
  }

  root.addEventListener("click", function (e) {
    var f = frameOf(e.target);
    if (f) {
      zoom(f);
    }
  });
  root.addEventListener("mouseover", function (e) {
    var f = frameOf(e.target);
    if (f) {
      showLine(details, f.info.split("\n").join(" | "));
    }
  });
  root.addEventListener("mouseout", function () {
    details.textContent = " ";
  });
  resetButton.addEventListener("click", resetZoom);
  searchButton.addEventListener("click", function () {
    if (currentSearch) {
      clearSearch();
    } else {
      askSearch();
    }
  });
  doc.addEventListener("keydown", function (e) {
    var find = (e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F");
    if (find || (e.key === "/" && !e.ctrlKey && !e.metaKey && !e.altKey)) {
      e.preventDefault();
      askSearch();
    } else if (e.key === "Escape") {
      clearSearch();
      resetZoom();
    }
  });
})();
