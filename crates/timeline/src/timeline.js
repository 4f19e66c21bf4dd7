// cpiflame timeline: the heat map of a recording over time (FlameScope's layout: a column
// per second, a row per slice of the second, offset 0 at the bottom), each cell shaded by
// its samples (wall time with off-CPU data) and coloured by its stall share or CPI; a range
// dragged on it drawn as that range's CPI flame graph, laid out as cpiflame-render lays out
// its SVG (same sibling order, minimum width, label fitting, colours, tooltips) and driven
// by the SVG's own script (hover, zoom, search) in a frame of its own.
(function () {
  "use strict";

  var started = performance.now();
  var D = JSON.parse(document.getElementById("data").textContent);
  var FLAME_JS = document.getElementById("flame-js").textContent;
  var S = D.scale;
  var L = D.look;

  // ---- decoding (see encode.rs) ----
  function varints(text) {
    var bin = atob(text);
    var n = bin.length;
    var out = new Float64Array(n);
    var count = 0;
    var v = 0;
    var mul = 1;
    for (var i = 0; i < n; i++) {
      var b = bin.charCodeAt(i);
      v += (b & 0x7f) * mul;
      if (b & 0x80) {
        mul *= 128;
      } else {
        out[count++] = v;
        v = 0;
        mul = 1;
      }
    }
    return out.subarray(0, count);
  }

  var K = D.values.length;
  var ROLE = {};
  var UNIT = [];
  for (var r = 0; r < K; r++) {
    ROLE[D.values[r][0]] = r;
    UNIT.push(D.values[r][1]);
  }
  var stacks = [];
  (function () {
    var v = varints(D.stacks);
    for (var i = 0; i < v.length; ) {
      var n = v[i];
      stacks.push(Array.prototype.slice.call(v.subarray(i + 1, i + 1 + n)));
      i += 1 + n;
    }
  })();
  var ROWS = D.rows;
  var COLS = D.columns;
  var NCELLS = ROWS * COLS;
  var cellStart = new Int32Array(NCELLS + 1);
  var entThread, entStack, entVals;
  (function () {
    var v = varints(D.cells);
    var counts = new Int32Array(NCELLS);
    var entries = 0;
    // First pass: how many entries each cell has.
    for (var i = 0, next = 0; i < v.length; ) {
      var cell = next + v[i];
      var groups = v[i + 1];
      i += 2;
      for (var g = 0; g < groups; g++) {
        var n = v[i + 1];
        counts[cell] += n;
        i += 2 + n * (1 + 2 * K);
      }
      entries += counts[cell];
      next = cell + 1;
    }
    entThread = new Int32Array(entries);
    entStack = new Int32Array(entries);
    entVals = new Float64Array(entries * 2 * K);
    var e = 0;
    for (var c = 0; c < NCELLS; c++) {
      cellStart[c] = e;
      e += counts[c];
    }
    cellStart[NCELLS] = e;
    e = 0;
    for (i = 0; i < v.length; ) {
      groups = v[i + 1];
      i += 2;
      for (g = 0; g < groups; g++) {
        var thread = v[i];
        n = v[i + 1];
        i += 2;
        var stack = 0;
        for (var j = 0; j < n; j++, e++) {
          stack += v[i];
          entThread[e] = thread;
          entStack[e] = stack;
          for (var k = 0; k < 2 * K; k++) {
            // Periods back in events: units multiplied out.
            entVals[e * 2 * K + k] = k % 2 ? v[i + 1 + k] * UNIT[k >> 1] : v[i + 1 + k];
          }
          i += 1 + 2 * K;
        }
      }
    }
  })();

  // ---- numbers and colours, as cpiflame-render writes them ----
  function lerp(a, b, t) {
    return [0, 1, 2].map(function (i) {
      return Math.round(a[i] + (b[i] - a[i]) * t);
    });
  }
  function hex(c) {
    return "#" + c.map(function (x) {
      return (x < 16 ? "0" : "") + x.toString(16);
    }).join("");
  }
  function stallColour(share) {
    if (share === null || isNaN(share)) {
      return S.unknown;
    }
    var t = Math.min(Math.max(share, 0), 1);
    return t <= 0.5 ? lerp(S.red, S.mid, t * 2) : lerp(S.mid, S.blue, (t - 0.5) * 2);
  }
  function cpiPosition(cpi) {
    if (cpi === null || isNaN(cpi) || cpi <= 0 || !isFinite(cpi)) {
      return null;
    }
    var lo = Math.log2(S.cpiLow);
    var hi = Math.log2(S.cpiHigh);
    return Math.min(Math.max((Math.log2(cpi) - lo) / (hi - lo), 0), 1);
  }
  function ratio(a, b) {
    return b === 0 ? null : a / b;
  }
  function thousands(n) {
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }
  function events(n) {
    var prefixes = ["k", "M", "G", "T", "P", "E"];
    if (n < 1000) {
      return String(n);
    }
    var v = n;
    var i = 0;
    while (v >= 999.5 && i < prefixes.length) {
      v /= 1000;
      i++;
    }
    var d = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
    return v.toFixed(d) + " " + prefixes[Math.max(i - 1, 0)];
  }
  function percent(r, d) {
    return r === null || !isFinite(r) ? "n/a" : (r * 100).toFixed(d) + "%";
  }
  function twoPlaces(v) {
    return v === null || !isFinite(v) ? "n/a" : v.toFixed(2);
  }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" }[c];
    });
  }
  // FNV-1a over the name's UTF-8: the warm colour of a graph without stall data.
  var encoder = new TextEncoder();
  function warmColour(name) {
    var h = 0xcbf29ce484222325n;
    var bytes = encoder.encode(name);
    for (var i = 0; i < bytes.length; i++) {
      h ^= BigInt(bytes[i]);
      h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
    }
    function unit(shift) {
      return Number((h >> BigInt(shift)) & 0xffffn) / 65535;
    }
    return [Math.round(210 + 45 * unit(0)), Math.round(70 + 140 * unit(16)), Math.round(20 + 50 * unit(32))];
  }

  // What a set of counts says: sums per value column, [samples, period] each.
  function get(sums, off, role, which) {
    var r = ROLE[role];
    return r === undefined ? 0 : sums[off + 2 * r + which];
  }
  function width(sums, off) {
    if (D.wall) {
      return get(sums, off, "oncpu", 1) + get(sums, off, "runnable", 1) + get(sums, off, "blocked", 1);
    }
    return get(sums, off, "cycles", 1);
  }
  function shareOf(sums, off) {
    return ratio(get(sums, off, "stalls", 1), get(sums, off, "cycles", 1));
  }
  function cpiOf(sums, off) {
    var c = ratio(get(sums, off, "cycles", 1), get(sums, off, "instructions", 1));
    return c !== null && c > 0 ? c : null;
  }
  function colourOf(sums, off) {
    if (D.colour === "stalls") {
      return stallColour(shareOf(sums, off));
    }
    if (D.colour === "cpi") {
      return stallColour(cpiPosition(cpiOf(sums, off)));
    }
    return null;
  }
  // Too few samples to place a cell on the scale: the width of the ratio's approximate 95%
  // interval (delta method, independently sampled events) is more than a quarter of the
  // scale, render's rule for washing a frame out.
  function uncertain(sums, off) {
    var c = get(sums, off, "cycles", 0);
    if (D.colour === "stalls") {
      var s = get(sums, off, "stalls", 0);
      var p = shareOf(sums, off);
      if (p === null) {
        return false;
      }
      if (s === 0 || c === 0) {
        return c < 16;
      }
      return 2 * 1.96 * Math.min(p, 1) * Math.sqrt(1 / s + 1 / c) > S.uncertainWidth;
    }
    if (D.colour === "cpi") {
      var n = get(sums, off, "instructions", 0);
      if (n === 0 || c === 0) {
        return false;
      }
      var octaves = Math.log2(S.cpiHigh) - Math.log2(S.cpiLow);
      return (2 * 1.96 * Math.sqrt(1 / n + 1 / c)) / Math.LN2 / octaves > S.uncertainWidth;
    }
    return false;
  }

  // ---- the thread filter ----
  var filterBox = document.getElementById("filter");
  var threadOk = new Uint8Array(D.threads.length).fill(1);
  (function () {
    var opt = document.createElement("option");
    opt.value = "all";
    var n = D.threads.length;
    opt.textContent = "all (" + n + (n === 1 ? " thread)" : " threads)");
    filterBox.appendChild(opt);
    var pids = {};
    D.threads.forEach(function (t, i) {
      (pids[t[0]] = pids[t[0]] || []).push(i);
    });
    Object.keys(pids)
      .map(Number)
      .sort(function (a, b) {
        return a - b;
      })
      .forEach(function (pid) {
        var list = pids[pid];
        var o = document.createElement("option");
        o.value = "p" + pid;
        o.textContent = "process " + pid + " (" + D.threads[list[0]][2] + ")";
        filterBox.appendChild(o);
        list.forEach(function (i) {
          var t = D.threads[i];
          var o = document.createElement("option");
          o.value = "t" + i;
          o.textContent = "\u00a0\u00a0thread " + t[1] + " (" + t[2] + ")";
          filterBox.appendChild(o);
        });
      });
  })();
  function applyFilter() {
    var v = filterBox.value;
    for (var i = 0; i < D.threads.length; i++) {
      threadOk[i] = v === "all" || v === "p" + D.threads[i][0] || v === "t" + i ? 1 : 0;
    }
  }

  // ---- the heat map ----
  var canvas = document.getElementById("heatmap");
  var ctx = canvas.getContext("2d");
  var LEFT = 48;
  var BOTTOM = 18;
  var TOP = 4;
  var RIGHT = 10;
  // Cells at least this wide: a long recording scrolls (#heatwrap) rather than shrinking
  // its columns to nothing.
  var MIN_CW = 6;
  var CW = MIN_CW;
  var CH = Math.max(3, Math.floor(300 / ROWS));
  // As FlameScope does, the columns share the width the page has (the heat map's box), one
  // per second however few seconds there are; laid out again when the window is resized.
  // Whether the cells' width changed (setting a canvas's size clears it, even to the same
  // size: only then).
  function layoutHeatmap() {
    var room = document.getElementById("heatwrap").clientWidth;
    var cw = Math.max(MIN_CW, Math.floor((room - LEFT - RIGHT) / COLS));
    if (cw === CW && canvas.hasAttribute("data-cw")) {
      return false;
    }
    CW = cw;
    canvas.width = LEFT + COLS * CW + RIGHT;
    canvas.height = TOP + ROWS * CH + BOTTOM;
    canvas.setAttribute("data-cw", CW);
    return true;
  }
  canvas.setAttribute("data-left", LEFT);
  canvas.setAttribute("data-top", TOP);
  canvas.setAttribute("data-ch", CH);
  canvas.setAttribute("data-rows", ROWS);
  canvas.setAttribute("data-columns", COLS);
  var cellSums = new Float64Array(NCELLS * 2 * K);
  var selected = new Uint8Array(NCELLS);
  var ranges = [];

  function sumCells() {
    cellSums.fill(0);
    for (var c = 0; c < NCELLS; c++) {
      for (var e = cellStart[c]; e < cellStart[c + 1]; e++) {
        if (!threadOk[entThread[e]]) {
          continue;
        }
        for (var k = 0; k < 2 * K; k++) {
          cellSums[c * 2 * K + k] += entVals[e * 2 * K + k];
        }
      }
    }
  }
  function shade(c) {
    // Samples, or wall time.
    return D.wall ? width(cellSums, c * 2 * K) : get(cellSums, c * 2 * K, "cycles", 0);
  }
  function cellRect(c) {
    var col = Math.floor(c / ROWS);
    var row = c % ROWS;
    return [LEFT + col * CW, TOP + (ROWS - 1 - row) * CH];
  }
  // Each cell's fill, and its faded fill (outside a selection): worked out once per filter.
  var fills = new Array(NCELLS);
  function cellFills() {
    var max = 0;
    for (var c = 0; c < NCELLS; c++) {
      max = Math.max(max, shade(c));
    }
    for (c = 0; c < NCELLS; c++) {
      var n = shade(c);
      if (n <= 0) {
        fills[c] = null;
        continue;
      }
      var off = c * 2 * K;
      var hue = colourOf(cellSums, off) || [90, 90, 90];
      if (uncertain(cellSums, off)) {
        hue = lerp(hue, S.pale, S.wash);
      }
      var t = 0.15 + 0.85 * (n / max);
      fills[c] = [hex(lerp([255, 255, 255], hue, t)), hex(lerp([255, 255, 255], hue, t * 0.3))];
    }
  }
  function drawHeatmap() {
    ctx.fillStyle = L.background;
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(LEFT, TOP, COLS * CW, ROWS * CH);
    var faded = ranges.length ? 1 : 0;
    for (var c = 0; c < NCELLS; c++) {
      if (fills[c] === null) {
        continue;
      }
      var xy = cellRect(c);
      ctx.fillStyle = fills[c][selected[c] ? 0 : faded];
      ctx.fillRect(xy[0], xy[1], CW - 1, CH - 1);
    }
    ctx.fillStyle = "#000000";
    ctx.font = "10px monospace";
    ctx.textAlign = "right";
    for (var r = 0; r < ROWS; r += Math.max(1, Math.round(ROWS / 5))) {
      ctx.fillText(Math.round((r * 1000) / ROWS) + "ms", LEFT - 4, TOP + (ROWS - r) * CH - 1);
    }
    ctx.textAlign = "left";
    var step = Math.max(1, Math.ceil(40 / CW));
    for (var col = 0; col < COLS; col += step) {
      ctx.fillText(String(col) + "s", LEFT + col * CW, TOP + ROWS * CH + 12);
    }
  }

  // ---- times: the --time text ----
  function pad6(n) {
    var s = String(n);
    while (s.length < 6) {
      s = "0" + s;
    }
    return s;
  }
  // The start of cell c (c = NCELLS: the end of the last) as perf prints times.
  function timeText(c) {
    var col = Math.floor(c / ROWS);
    var row = c % ROWS;
    return String(D.origin + col) + "." + pad6((row * 1000000) / ROWS);
  }
  function merged() {
    var list = ranges
      .map(function (r) {
        return [Math.min(r[0], r[1]), Math.max(r[0], r[1]) + 1];
      })
      .sort(function (a, b) {
        return a[0] - b[0];
      });
    var out = [];
    list.forEach(function (r) {
      var last = out[out.length - 1];
      if (last && r[0] <= last[1]) {
        last[1] = Math.max(last[1], r[1]);
      } else {
        out.push(r.slice());
      }
    });
    return out;
  }
  var timeBox = document.getElementById("time");
  function showTime() {
    var m = merged();
    selected.fill(0);
    m.forEach(function (r) {
      selected.fill(1, r[0], r[1]);
    });
    timeBox.value = m
      .map(function (r) {
        return timeText(r[0]) + "," + timeText(r[1]);
      })
      .join(" ");
  }
  document.getElementById("copy").addEventListener("click", function () {
    timeBox.select();
    if (navigator.clipboard) {
      navigator.clipboard.writeText(timeBox.value);
    } else {
      document.execCommand("copy");
    }
  });

  // ---- the flame graph of the selected cells ----
  var holder = document.getElementById("flamegraph");
  var status = document.getElementById("selection");

  function buildTree() {
    var ns = stacks.length;
    var sums = new Float64Array(ns * 2 * K);
    var samples = 0;
    for (var c = 0; c < NCELLS; c++) {
      if (!selected[c]) {
        continue;
      }
      for (var e = cellStart[c]; e < cellStart[c + 1]; e++) {
        if (!threadOk[entThread[e]]) {
          continue;
        }
        var s = entStack[e];
        for (var k = 0; k < 2 * K; k++) {
          sums[s * 2 * K + k] += entVals[e * 2 * K + k];
        }
      }
    }
    var leaves = [];
    for (s = 0; s < ns; s++) {
      var any = false;
      for (k = 0; k < 2 * K; k++) {
        any = any || sums[s * 2 * K + k] !== 0;
      }
      if (any) {
        leaves.push(s);
      }
    }
    // Depth-first order of the stacks: frame ranks compared, a prefix first.
    leaves.sort(function (a, b) {
      var x = stacks[a];
      var y = stacks[b];
      var n = Math.min(x.length, y.length);
      for (var i = 0; i < n; i++) {
        if (x[i] !== y[i]) {
          return x[i] - y[i];
        }
      }
      return x.length - y.length;
    });
    var nodes = [{ frame: -1, depth: 0, parent: 0, end: 1, start: 0, total: new Float64Array(2 * K) }];
    var path = [];
    var prev = null;
    leaves.forEach(function (s) {
      var st = stacks[s];
      var common = 0;
      if (prev) {
        var n = Math.min(prev.length, st.length);
        while (common < n && prev[common] === st[common]) {
          common++;
        }
      }
      path.length = common;
      for (var i = common; i < st.length; i++) {
        var parent = path.length ? path[path.length - 1] : 0;
        var index = nodes.length;
        nodes.push({ frame: st[i], depth: path.length + 1, parent: parent, end: index + 1, start: 0, total: new Float64Array(2 * K) });
        path.push(index);
      }
      var at = path.length ? path[path.length - 1] : 0;
      var t = nodes[at].total;
      for (var k = 0; k < 2 * K; k++) {
        t[k] += sums[s * 2 * K + k];
      }
      samples += get(sums, s * 2 * K, "cycles", 0);
      prev = st;
    });
    for (var i = nodes.length - 1; i >= 1; i--) {
      var p = nodes[nodes[i].parent];
      for (k = 0; k < 2 * K; k++) {
        p.total[k] += nodes[i].total[k];
      }
      p.end = Math.max(p.end, nodes[i].end);
    }
    var cursor = new Float64Array(nodes.length);
    for (i = 1; i < nodes.length; i++) {
      var q = nodes[i].parent;
      nodes[i].start = cursor[q];
      cursor[q] += width(nodes[i].total, 0);
      cursor[i] = nodes[i].start;
    }
    return { nodes: nodes, samples: samples };
  }

  // The label of a frame `w` pixels wide: the whole name, or its start and "..", or nothing.
  function fitLabel(name, w) {
    var fit = Math.floor((w - 2 * L.labelPad) / L.charWidth);
    if (!(fit >= 3)) {
      return "";
    }
    var chars = Array.from(name);
    return chars.length <= fit ? name : chars.slice(0, fit - 2).join("") + "..";
  }

  function frameName(node) {
    return node.frame < 0 ? "all" : D.frames[node.frame][0];
  }

  function details(node, total) {
    var out = "";
    if (node.frame >= 0) {
      var f = D.frames[node.frame];
      var module = f[1];
      var kind = f[2];
      if (module && kind) {
        out += "\nmodule: " + module + " (" + kind + ")";
      } else if (module) {
        out += "\nmodule: " + module;
      } else if (kind) {
        out += "\n(" + kind + ")";
      }
    }
    var t = node.total;
    var cyc = get(t, 0, "cycles", 1);
    var share = percent(ratio(cyc, total.cycles), 2);
    var samples = thousands(get(t, 0, "cycles", 0));
    if (D.wall) {
      var ms = function (ns) {
        return (ns / 1e6).toFixed(3) + " ms";
      };
      out += "\nwall: " + ms(width(t, 0)) + " (" + percent(ratio(width(t, 0), total.width), 2) + " of all)" +
        "\non CPU: " + ms(get(t, 0, "oncpu", 1)) + " · runnable: " + ms(get(t, 0, "runnable", 1)) +
        " · blocked: " + ms(get(t, 0, "blocked", 1));
    }
    if (D.colour === "stalls") {
      out += "\ncycles: " + samples + " samples, " + events(cyc) + " events (" + share + " of all)" +
        "\nstalls: " + thousands(get(t, 0, "stalls", 0)) + " samples · stalled: " + percent(shareOf(t, 0), 1) + " of cycles";
    } else if (D.colour === "cpi") {
      out += "\ncycles: " + samples + " samples, " + events(cyc) + " events (" + share + " of all)";
    } else {
      out += "\nsamples: " + samples + ", " + events(cyc) + " events (" + share + ")";
    }
    if (D.instructionsEvent !== null) {
      var ins = get(t, 0, "instructions", 1);
      if (ins === 0) {
        out += "\ninstructions: none sampled · CPI: n/a";
      } else {
        var cpi = cpiOf(t, 0);
        out += "\ninstructions: " + thousands(get(t, 0, "instructions", 0)) + " samples, " + events(ins) +
          " events\nCPI: " + twoPlaces(cpi) + " · IPC: " + twoPlaces(cpi === null ? null : 1 / cpi);
      }
    }
    return out;
  }

  function stats(root, samples) {
    var t = root.total;
    if (D.colour === "stalls") {
      return "cycles: " + thousands(samples) + " samples (event " + D.cyclesEvent + ") · stalled: " +
        percent(shareOf(t, 0), 1) + " (event " + D.stallsEvent + ")";
    }
    if (D.colour === "cpi") {
      var cpi = cpiOf(t, 0);
      return "CPI " + twoPlaces(cpi) + " · IPC " + twoPlaces(cpi === null ? null : 1 / cpi) + " · " + D.cyclesEvent +
        ": " + thousands(samples) + " samples, " + events(get(t, 0, "cycles", 1)) + " events · " +
        D.instructionsEvent + ": " + events(get(t, 0, "instructions", 1)) + " events";
    }
    return D.cyclesEvent + ": " + thousands(samples) + " samples · no stall data for this file, so colours only tell frames apart";
  }

  function legend(w) {
    if (D.colour === "name") {
      return null;
    }
    var bar = w >= 600 ? 200 : w / 3;
    var labels = D.colour === "stalls"
      ? [[0, "0%"], [0.5, "50%"], [1, "100%"]]
      : [[0, "≤" + S.cpiLow], [0.25, "0.5"], [0.5, "1"], [0.75, "2"], [1, "≥" + S.cpiHigh]];
    return {
      id: D.colour === "stalls" ? "stall-scale" : "cpi-scale",
      caption: D.colour === "stalls" ? D.stallCaption : "CPI (log scale):",
      bar: bar,
      labels: labels
    };
  }

  // The estimated width of a line of text at `px` pixels, as cpiflame-render's wrap.rs
  // estimates it.
  function lineWidth(text, px) {
    return Array.from(text).length * px * L.lineEm;
  }

  // `text` in lines of at most `room` pixels at `px`, as cpiflame-render's wrap.rs breaks it:
  // after " · " separators, else at spaces, else anywhere; at most `maxLines`, the last cut
  // with ".." when the text does not fit in them.
  function wrap(text, room, px, maxLines) {
    var fit = Math.max(3, Math.floor(room / (px * L.lineEm)));
    var len = function (s) {
      return Array.from(s).length;
    };
    var lines = [];
    var line = "";
    // `piece` after the line's text and a space, when that fits; else null.
    function joined(piece) {
      var with_ = line === "" ? len(piece) : len(line) + 1 + len(piece);
      return with_ <= fit ? (line === "" ? piece : line + " " + piece) : null;
    }
    var parts = text.split(" · ");
    parts.forEach(function (part, k) {
      if (k + 1 < parts.length) {
        part += " ·";
      }
      var with_ = joined(part);
      if (with_ !== null) {
        line = with_;
        return;
      }
      if (len(part) <= fit) {
        lines.push(line);
        line = part;
        return;
      }
      // A part longer than a line: its words, from where the line is.
      part.split(" ").forEach(function (word) {
        var w = joined(word);
        if (w !== null) {
          line = w;
          return;
        }
        if (line !== "") {
          lines.push(line);
          line = "";
        }
        // A word longer than a line: runs of `fit` characters.
        var chars = Array.from(word);
        for (var i = 0; i < chars.length; i += fit) {
          var run = chars.slice(i, i + fit).join("");
          if (i + fit < chars.length) {
            lines.push(run);
          } else {
            line = run;
          }
        }
      });
    });
    if (line !== "" || lines.length === 0) {
      lines.push(line);
    }
    maxLines = Math.max(1, maxLines);
    if (lines.length <= maxLines) {
      return { lines: lines, cut: false };
    }
    var rest = lines.slice(maxLines - 1).join(" ");
    lines.length = maxLines - 1;
    lines.push(Array.from(rest).slice(0, Math.max(fit - 2, 0)).join("").replace(/\s+$/, "") + "..");
    return { lines: lines, cut: true };
  }

  // The <text> lines of a wrapped block, centred at `mid` on baselines `ys`, as page.rs's
  // write_block writes them.
  function block(o, text, wrapped, first, more, mid, ys) {
    wrapped.lines.forEach(function (line, k) {
      var t = "<text " + (k === 0 ? first : more) + ' x="' + mid + '" y="' + ys[k] + '">' + esc(line);
      if (wrapped.cut && k + 1 === wrapped.lines.length) {
        t += "<title>" + esc(text) + "</title>";
      }
      o.push(t + "</text>");
    });
  }

  // The legend bar's left edge and length, as page.rs's bar_place places it: centred, unless
  // its caption or its last label would pass the margin.
  function barPlace(lg, w) {
    var x0 = Math.max((w - lg.bar) / 2, L.xpad + lineWidth(lg.caption, 12) + 8);
    var last = lineWidth(lg.labels[lg.labels.length - 1][1], 12) / 2;
    return [x0, Math.max(Math.min(lg.bar, w - L.xpad - last - x0), 10)];
  }

  // The SVG of the tree, as cpiflame-render's page.rs writes it.
  function svgOf(tree) {
    var nodes = tree.nodes;
    var root = nodes[0];
    var w = D.width;
    var total = width(root.total, 0);
    var span = w - 2 * L.xpad;
    var scale = span / total;
    var visible = [];
    for (var i = 0; i < nodes.length; ) {
      var n = width(nodes[i].total, 0);
      if (n === 0 || n * scale < D.minWidth) {
        i = nodes[i].end;
      } else {
        visible.push(i);
        i++;
      }
    }
    var maxDepth = 0;
    visible.forEach(function (i) {
      maxDepth = Math.max(maxDepth, nodes[i].depth);
    });
    var room = w - 2 * L.xpad;
    var title = wrap(D.title, L.titleRoom, 17, L.maxLines);
    var statsText = stats(root, tree.samples);
    var statsLines = wrap(statsText, room, 12, L.maxLines);
    var sub = D.subtitle === null ? null : wrap(D.subtitle, room, 12, L.maxLines);
    var titleYs = title.lines.map(function (_, k) {
      return 24 + 20 * k;
    });
    var first = titleYs[titleYs.length - 1] + 20;
    var lines = [];
    for (var k = 0; k < statsLines.lines.length + (sub ? sub.lines.length : 0); k++) {
      lines.push(first + 18 * k);
    }
    var last = lines[lines.length - 1];
    var lg = legend(w);
    var barTop = lg ? last + 12 : null;
    var framesTop = lg ? barTop + 34 : last + 14;
    var height = framesTop + (maxDepth + 1) * L.row + L.footer;
    var mid = (w / 2).toFixed(1);
    var o = [];
    o.push('<svg version="1.1" width="' + w + '" height="' + height + '" viewBox="0 0 ' + w + " " + height + '" xmlns="http://www.w3.org/2000/svg">');
    o.push("<style>text { font-family: monospace; font-size: 12px; fill: #000000; }\n#title { font-size: 17px; text-anchor: middle; }\n.sub { text-anchor: middle; }\n.ui { cursor: pointer; }\n.ui:hover { text-decoration: underline; }\n#frames .f { cursor: pointer; }\n#frames .f text { pointer-events: none; }\n#frames .f:hover rect { stroke: #000000; stroke-width: 0.5; }\n#frames .anc { opacity: 0.5; }\n</style>");
    if (lg) {
      o.push('<defs><linearGradient id="' + lg.id + '" x1="0" y1="0" x2="1" y2="0"><stop offset="0" stop-color="' + hex(S.red) +
        '"/><stop offset="0.5" stop-color="' + hex(S.mid) + '"/><stop offset="1" stop-color="' + hex(S.blue) + '"/></linearGradient></defs>');
    }
    o.push('<rect x="0" y="0" width="' + w + '" height="' + height + '" fill="' + L.background + '"/>');
    block(o, D.title, title, 'id="title"', 'class="sub" style="font-size: 17px"', mid, titleYs);
    block(o, statsText, statsLines, 'id="subtitle" class="sub"', 'class="sub"', mid, lines);
    if (sub) {
      block(o, D.subtitle, sub, 'class="sub"', 'class="sub"', mid, lines.slice(statsLines.lines.length));
    }
    o.push('<text id="reset" class="ui" x="' + L.xpad + '" y="24" visibility="hidden">Reset Zoom</text>');
    o.push('<text id="search" class="ui" x="' + (w - L.xpad).toFixed(1) + '" y="24" text-anchor="end">Search</text>');
    if (lg) {
      var place = barPlace(lg, w);
      var x0 = place[0];
      var bar = place[1];
      var g = '<g id="legend"><text x="' + (x0 - 8).toFixed(1) + '" y="' + (barTop + 10) + '" text-anchor="end">' + esc(lg.caption) +
        '</text><rect x="' + x0.toFixed(1) + '" y="' + barTop + '" width="' + bar.toFixed(1) + '" height="10" fill="url(#' + lg.id + ')"/>';
      lg.labels.forEach(function (l) {
        g += '<text x="' + (x0 + bar * l[0]).toFixed(1) + '" y="' + (barTop + 23) + '" text-anchor="middle">' + esc(l[1]) + "</text>";
      });
      o.push(g + "</g>");
    }
    o.push('<g id="frames" data-total="' + total + '" data-span="' + span.toFixed(1) + '" data-xpad="' + L.xpad.toFixed(1) +
      '" data-char="' + L.charWidth.toFixed(2) + '" data-pad="' + L.labelPad.toFixed(1) + '" data-inverted="' + (D.inverted ? 1 : 0) + '">');
    var totals = { cycles: get(root.total, 0, "cycles", 1), width: total };
    visible.forEach(function (i) {
      var node = nodes[i];
      var y = framesTop + (D.inverted ? node.depth : maxDepth - node.depth) * L.row;
      var n = width(node.total, 0);
      var x = L.xpad + node.start * scale;
      var fw = n * scale;
      var name = frameName(node);
      var fill = colourOf(node.total, 0) || warmColour(name);
      o.push('<g class="f" data-s="' + node.start + '" data-n="' + n + '"><title>' + esc(name + details(node, totals)) +
        '</title><rect x="' + x.toFixed(2) + '" y="' + y + '" width="' + fw.toFixed(2) + '" height="' + (L.row - 1) +
        '" fill="' + hex(fill) + '"/><text x="' + (x + L.labelPad).toFixed(2) + '" y="' + (y + 11) + '">' + esc(fitLabel(name, fw)) + "</text></g>");
    });
    o.push("</g>");
    o.push('<text id="details" x="' + L.xpad + '" y="' + (height - 28) + '"> </text>');
    o.push('<text id="matched" x="' + (w - L.xpad).toFixed(1) + '" y="' + (height - 10) + '" text-anchor="end"> </text>');
    o.push("</svg>");
    return { svg: o.join("\n"), height: height, frames: visible.length };
  }

  function drawGraph() {
    var t0 = performance.now();
    holder.textContent = "";
    if (!ranges.length) {
      status.textContent = "Drag on the heat map to select a time range (shift-drag adds one).";
      return;
    }
    var tree = buildTree();
    if (width(tree.nodes[0].total, 0) === 0) {
      status.textContent = "No samples in the selected range.";
      return;
    }
    var out = svgOf(tree);
    var frame = document.createElement("iframe");
    frame.style.width = D.width + "px";
    frame.setAttribute("data-height", out.height);
    holder.appendChild(frame);
    fitGraph();
    var doc = frame.contentDocument;
    doc.open();
    doc.write('<!DOCTYPE html><html><head><meta charset="utf-8"><style>body { margin: 0; overflow: hidden; } svg { display: block; width: 100%; height: auto; }</style></head><body>' + out.svg +
      "<script>" + FLAME_JS + "<\/script></body></html>");
    doc.close();
    var ms = performance.now() - t0;
    status.textContent = thousands(tree.samples) + " samples in the selection, " + out.frames + " frames drawn in " + ms.toFixed(0) + " ms";
    holder.setAttribute("data-ms", ms.toFixed(1));
  }

  // The graph is --width wide, or as wide as the page where that is narrower (the SVG
  // scales down with its frame): its frame's height follows.
  function fitGraph() {
    var frame = holder.querySelector("iframe");
    if (frame === null) {
      return;
    }
    var scale = Math.min(1, holder.clientWidth / D.width);
    frame.style.height = Math.ceil(Number(frame.getAttribute("data-height")) * scale) + "px";
  }

  // ---- interaction ----
  function cellAt(ev) {
    var box = canvas.getBoundingClientRect();
    var x = ev.clientX - box.left - LEFT;
    var y = ev.clientY - box.top - TOP;
    var col = Math.floor(x / CW);
    var row = ROWS - 1 - Math.floor(y / CH);
    if (col < 0 || col >= COLS || row < 0 || row >= ROWS) {
      return null;
    }
    return col * ROWS + row;
  }
  var dragFrom = null;
  canvas.addEventListener("mousedown", function (ev) {
    var c = cellAt(ev);
    if (c === null) {
      return;
    }
    ev.preventDefault();
    if (!ev.shiftKey) {
      ranges = [];
    }
    dragFrom = c;
    ranges.push([c, c]);
    showTime();
    drawHeatmap();
  });
  canvas.addEventListener("mousemove", function (ev) {
    var c = cellAt(ev);
    var info = document.getElementById("cell");
    if (c !== null) {
      var off = c * 2 * K;
      var col = Math.floor(c / ROWS);
      var row = c % ROWS;
      var text = "second " + col + ", " + Math.round((row * 1000) / ROWS) + " ms (" + timeText(c) + "): ";
      text += D.wall ? (width(cellSums, off) / 1e6).toFixed(3) + " ms wall time" : thousands(get(cellSums, off, "cycles", 0)) + " samples";
      if (D.colour === "stalls") {
        text += ", stalled " + percent(shareOf(cellSums, off), 1);
      } else if (D.colour === "cpi") {
        text += ", CPI " + twoPlaces(cpiOf(cellSums, off));
      }
      if (uncertain(cellSums, off)) {
        text += " (too few samples to place on the scale: washed out)";
      }
      info.textContent = text;
    }
    if (dragFrom !== null && c !== null && ranges[ranges.length - 1][1] !== c) {
      ranges[ranges.length - 1] = [dragFrom, c];
      showTime();
      drawHeatmap();
    }
  });
  window.addEventListener("mouseup", function () {
    if (dragFrom === null) {
      return;
    }
    dragFrom = null;
    drawGraph();
  });
  filterBox.addEventListener("change", function () {
    applyFilter();
    sumCells();
    cellFills();
    drawHeatmap();
    drawGraph();
  });

  document.getElementById("title").textContent = D.title;
  document.getElementById("notes").textContent = D.subtitle || "";
  var what = D.colour === "stalls" ? "stall share" : D.colour === "cpi" ? "CPI" : "no stall data: shade only";
  document.getElementById("subtitle").textContent = D.columns + " s from " + D.origin + " s, " + ROWS +
    " rows per second; shade: " + (D.wall ? "wall time" : "samples") + "; colour: " + what;
  (function () {
    var lg = legend(D.width);
    var box = document.getElementById("legend");
    if (!lg) {
      return;
    }
    var c = document.createElement("canvas");
    c.width = 200;
    c.height = 10;
    var g = c.getContext("2d");
    for (var x = 0; x < 200; x++) {
      g.fillStyle = hex(stallColour(x / 199));
      g.fillRect(x, 0, 1, 10);
    }
    box.appendChild(document.createTextNode(lg.caption + " " + lg.labels[0][1] + " "));
    box.appendChild(c);
    box.appendChild(document.createTextNode(" " + lg.labels[lg.labels.length - 1][1]));
  })();
  applyFilter();
  sumCells();
  cellFills();
  layoutHeatmap();
  drawHeatmap();
  window.addEventListener("resize", function () {
    if (layoutHeatmap()) {
      drawHeatmap();
    }
    fitGraph();
  });
  canvas.setAttribute("data-load-ms", (performance.now() - started).toFixed(1));
})();
