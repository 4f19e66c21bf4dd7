  // (Spliced into timeline.js by lib.rs's `with_bands`, only for a recording with regions.)
  // ---- the marked regions: bands over the heat map ----
  // A region's intervals are drawn in every column they cover as a lane at the column's
  // left edge (one lane per region, in name order), from the interval's start to its end
  // (time runs up a column, as the rows do); bands of threads the filter hides are not
  // drawn. One colour per region name (Dark2; a ninth name reuses the first colour).
  var REGIONS = D.regions || [];
  var BAND_COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"];
  var tidIndex = {};
  D.threads.forEach(function (t, i) {
    tidIndex[t[1]] = i;
  });
  function bandColour(i) {
    return BAND_COLOURS[i % BAND_COLOURS.length];
  }
  function laneWidth() {
    return Math.max(1, Math.min(4, Math.floor((CW - 1) / (2 * Math.max(1, REGIONS.length)))));
  }
  // The rectangles [x, y, w, h] of region i's interval [start, end] (ns since column 0).
  function bandRects(i, start, end) {
    var out = [];
    var lw = laneWidth();
    var H = ROWS * CH;
    var bottom = TOP + H;
    var first = Math.max(0, Math.floor(start / 1e9));
    var last = Math.min(COLS - 1, Math.floor(end / 1e9));
    for (var col = first; col <= last; col++) {
      var a = Math.max(start, col * 1e9) - col * 1e9;
      var b = Math.min(end, (col + 1) * 1e9) - col * 1e9;
      var y0 = bottom - (b / 1e9) * H;
      var y1 = bottom - (a / 1e9) * H;
      out.push([LEFT + col * CW + i * lw, y0, lw, Math.max(1, y1 - y0)]);
    }
    return out;
  }
  function drawBands() {
    canvas.setAttribute("data-lane", laneWidth());
    REGIONS.forEach(function (r, i) {
      ctx.fillStyle = bandColour(i);
      r.intervals.forEach(function (iv) {
        var t = tidIndex[iv[0]];
        if (t !== undefined && !threadOk[t]) {
          return;
        }
        bandRects(i, iv[1], iv[2]).forEach(function (q) {
          ctx.fillRect(q[0], q[1], q[2], q[3]);
        });
      });
    });
  }
  // The cell of a time (ns since column 0), clamped to the heat map.
  function cellOfTime(ns) {
    var col = Math.floor(ns / 1e9);
    if (col < 0) {
      return 0;
    }
    if (col >= COLS) {
      return NCELLS - 1;
    }
    return col * ROWS + Math.floor(((ns - col * 1e9) * ROWS) / 1e9);
  }
  (function () {
    if (!REGIONS.length) {
      return;
    }
    var box = document.createElement("span");
    box.id = "regions";
    box.appendChild(document.createTextNode("regions:"));
    REGIONS.forEach(function (r, i) {
      var item = document.createElement("button");
      item.type = "button";
      item.className = "region";
      item.setAttribute("data-region", r.name);
      item.title = "select the cells of region " + r.name + "'s " + r.intervals.length +
        " intervals (--region " + r.name + " selects its samples exactly)";
      var swatch = document.createElement("span");
      swatch.className = "swatch";
      // Styled here, not in the page's sheet: a page without regions stays as it was.
      swatch.style.cssText = "display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle";
      swatch.style.background = bandColour(i);
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(r.name + " (" + r.intervals.length + ")"));
      item.addEventListener("click", function () {
        ranges = r.intervals
          .filter(function (iv) {
            var t = tidIndex[iv[0]];
            return t === undefined || threadOk[t];
          })
          .map(function (iv) {
            return [cellOfTime(iv[1]), cellOfTime(iv[2])];
          });
        showTime();
        drawHeatmap();
        drawGraph();
      });
      box.appendChild(item);
    });
    document.getElementById("legend").parentNode.appendChild(box);
  })();

