// One layer's attention heads drawn in the browser: a head, a layer or a highlighted token changes here, in the
// same frame, with no message to the server. The data comes as bytes (engine/views/layer_view.py): a 4-byte length,
// a JSON header, then every head's cells as little-endian uint16 counts of the header's step (from 0xF000: a weight
// under half a step, 64 codes a decade of -log10; 0xFFFF: blocked).
// On a page the view owns ?layer, ?head and ?focus in the address bar: Streamlit rewrites the query string from
// the server's copy, so every write is merged with the view's parameters. In a notebook it leaves the URL alone.

const views = new Map(); // component key → its view's state (kept across the server's reruns)
const SIDE = 256; // px of a column of head buttons beside the map, with its 24 px gap (three thumbnails a row)
const TILE = 46; // px a grid's thumbnail takes (40 px and its gap): the model view's every layer × head
let historyWrapped = false;
let listening = false;

function listen() {
  // Before another control makes the server run, each live view tells it its choice, so that run sees it (one
  // message: Streamlit coalesces the two). A page link waits for the server's answer: the page change would
  // otherwise leave before the view's message, and the run that merges them would stay on this page.
  if (listening) return;
  listening = true;
  const tell = (event) => {
    for (const state of views.values()) {
      if (!state.alive() || !state.untold() || state.contains(event.target)) continue;
      state.tell();
      const held = event.type === "click" && heldTarget(event.target);
      if (held) {
        event.preventDefault();
        event.stopImmediatePropagation();
        state.pendingClick = held;
      }
    }
  };
  document.addEventListener("click", tell, true);
  document.addEventListener("keydown", (event) => event.key === "Enter" || event.key === " " ? tell(event) : null, true);
}

function heldTarget(node) {
  // a click that must wait for the server to have the view's choice: a page link (it would leave first), a download
  // (its file is built for the server's head) or a keyed expander's summary (its own rerun is lost when the view's
  // message goes first); a selector that finds it again after the server's run (by its keyed container: a link's
  // address may name the view's head by then)
  const link = node.closest?.("a[href]");
  const held = link || node.closest?.('[data-testid="stDownloadButton"], summary');
  if (!held) return null;
  const keyed = held.closest('[class*="st-key-"]');
  const key = keyed && [...keyed.classList].find((c) => c.startsWith("st-key-"));
  if (key) return `.${CSS.escape(key)} a, .${CSS.escape(key)} button, .${CSS.escape(key)} summary`;
  return link ? `a[href="${CSS.escape(link.getAttribute("href"))}"]` : null;
}

async function decode(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = view.getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + size)));
  const start = 4 + size + ((8 - ((4 + size) % 8)) % 8); // the cells start on an 8-byte boundary
  const packed = bytes.slice(start); // a copy at offset 0
  const inflate = () => new Response(new Blob([packed]).stream().pipeThrough(new DecompressionStream("deflate")));
  const bits = new Uint16Array(header.deflate ? await inflate().arrayBuffer() : packed.buffer);
  const cells = header.rows * header.cols;
  const heads = [];
  for (let i = 0; i < bits.length / cells; i++) {
    const z = new Float32Array(cells);
    let top = 0;
    for (let c = 0; c < cells; c++) {
      const count = bits[i * cells + c];
      z[c] = count === 0xffff ? NaN : count >= 0xf000 ? 10 ** (-(count - 0xf000) / 64) : count * header.step;
      if (z[c] > top) top = z[c];
    }
    heads.push({ z, top: top || 1 });
  }
  return { ...header, heads };
}

function palette(colours) {
  // 256 RGB triples along the theme's colour stops
  const rgb = colours.map((c) => c.startsWith("#")
    ? [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16))
    : c.replace(/[^\d.,]/g, "").split(",").slice(0, 3).map(Number));
  const out = new Uint8ClampedArray(256 * 3);
  for (let i = 0; i < 256; i++) {
    const at = (i / 255) * (rgb.length - 1), lo = Math.floor(at), hi = Math.min(lo + 1, rgb.length - 1);
    for (let ch = 0; ch < 3; ch++) out[i * 3 + ch] = rgb[lo][ch] + (rgb[hi][ch] - rgb[lo][ch]) * (at - lo);
  }
  return out;
}

function paint(canvas, z, rows, cols, top, lut, log = false) {
  // one cell a pixel; CSS scales it up without smoothing
  canvas.width = cols;
  canvas.height = rows;
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(cols, rows);
  for (let c = 0; c < z.length; c++) {
    const v = z[c];
    if (Number.isNaN(v)) {
      img.data.set([205, 208, 214, 255], c * 4); // blocked: the grey of the server's maps
      continue;
    }
    const share = log ? 1 + Math.log10(Math.max(v / top, 1e-4)) / 4 : v / top; // log: 10⁻⁴ × max … max
    const level = Math.max(0, Math.min(255, Math.round(share * 255))) * 3;
    img.data.set([lut[level], lut[level + 1], lut[level + 2], 255], c * 4);
  }
  ctx.putImageData(img, 0, 0);
}

function wrapHistory() {
  // Streamlit writes the whole query string from the server's copy: keep each live view's parameters in it
  if (historyWrapped) return;
  historyWrapped = true;
  for (const name of ["pushState", "replaceState"]) {
    const write = history[name].bind(history);
    history[name] = (state, unused, url) => write(state, unused, url === undefined ? url : withViews(url));
  }
  window.addEventListener("popstate", () => {
    for (const state of views.values()) {
      if (!state.alive()) continue;
      fromUrl(state);
      state.redraw?.();
    }
  });
}

function fromUrl(state) {
  // the view's layer, head and token as the address bar says (Back, Forward), where they fit this view
  const url = new URL(window.location.href);
  const read = (name, fits) => {
    const v = Number.parseInt(url.searchParams.get(state.names[name]) ?? "", 10);
    return Number.isInteger(v) && fits(v) ? v : null;
  };
  state.head = read("head", (v) => v >= 0 && v < state.bounds.heads) ?? state.head;
  state.layer = read("layer", (v) => state.bounds.layers.includes(v)) ?? state.layer;
  state.focus = read("focus", (v) => v >= 0 && v < state.bounds.tokens);
}

function withViews(url) {
  const out = new URL(url, window.location.href);
  for (const state of views.values()) if (state.alive()) for (const [k, v] of Object.entries(state.params())) {
    if (v === null) out.searchParams.delete(k);
    else out.searchParams.set(k, v);
  }
  return out.toString();
}

function labelEvery(cellPx, fontPx) {
  return Math.max(1, Math.ceil((fontPx + 2) / Math.max(cellPx, 0.1)));
}

export default function (component) {
  // the cells arrive deflated: drawn once inflated (a few ms), unless the server sent newer data meanwhile
  const { data, parentElement } = component;
  if (!data) return;
  const mine = (parentElement.__layerViewData = data);
  let cleanup = null;
  decode(data).then((d) => {
    if (parentElement.__layerViewData === mine) cleanup = mount(component, d);
  });
  return () => cleanup?.();
}

function mount(component, d) {
  const { parentElement, setStateValue } = component;
  const key = d.id || component.key; // the page's key: Streamlit may give a remounted element a new one
  const lut = palette(d.colors);
  const known = views.get(key);
  // the server's choice wins when it changed (a link, a lesson step); else the browser's last choice stays
  const fresh = !known || known.server.layer !== d.layer || known.server.head !== d.head || known.server.focus !== d.focus;
  const state = fresh ? { layer: d.layer, head: d.head, focus: d.focus, pendingClick: known?.pendingClick } : known;
  state.server = { layer: d.layer, head: d.head, focus: d.focus };
  state.live = true;
  // live while mounted and in the page: a page change may drop the element without unmounting it
  state.alive = () => state.live && root.isConnected;
  const mine = () => ({ layer: state.layer, head: state.head, focus: state.focus });
  state.untold = () => Boolean(setStateValue) && JSON.stringify(mine()) !== JSON.stringify(state.server);
  state.tell = () => setStateValue("view", mine());
  state.contains = (node) => root.contains(node) || parentElement.host?.contains?.(node) || parentElement.contains(node);
  const owns = Boolean(d.params); // a page's view keeps its URL parameters; a notebook's leaves the address bar alone
  state.params = () => owns ? {
    [d.params.layer]: String(state.layer),
    [d.params.head]: String(state.head),
    [d.params.focus]: state.focus === null ? null : String(state.focus),
  } : {};
  views.set(key, state);
  state.names = d.params;
  state.bounds = { heads: d.n_heads, layers: d.layers, tokens: d.square ? d.n_tokens : 0 };
  // the highlighted token (a position) ↔ the row and the column that hold it (a block of a long input's overview)
  const holding = (first, last) => (t) => {
    const i = t === null ? -1 : first.findIndex((f, j) => f <= t && t <= last[j]);
    return i < 0 ? null : i;
  };
  const rowOf = holding(d.q_first, d.q_last), colOf = holding(d.k_first, d.k_last);
  if (owns) wrapHistory();
  if (owns && !fresh) fromUrl(state); // a run that Back or Forward asked for: the address bar's view
  if (setStateValue) listen();
  const layerIndex = () => Math.max(0, d.layers.indexOf(state.layer));
  const head = () => d.heads[layerIndex() * d.n_heads + state.head];
  const side = d.grid ? 24 + 32 + d.n_heads * TILE : SIDE; // the model view's grid: a row label and its heads

  parentElement.querySelectorAll(".lv").forEach((old) => old.remove());
  const root = document.createElement("div");
  root.className = "lv";
  parentElement.appendChild(root);
  const layerBar = d.layers.length > 1 && !d.grid ? root.appendChild(document.createElement("div")) : null;
  const headBar = root.appendChild(document.createElement("div"));
  const title = root.appendChild(document.createElement("h3"));
  const source = root.appendChild(document.createElement("p"));
  source.className = "source";
  source.textContent = d.source || "";
  source.hidden = !d.source;
  const box = root.appendChild(document.createElement("div"));
  const plot = box.appendChild(document.createElement("canvas"));
  const labels = box.appendChild(document.createElement("canvas"));
  const tip = box.appendChild(document.createElement("div"));
  const legend = root.appendChild(document.createElement("div"));
  const caption = root.appendChild(document.createElement("p"));
  legend.className = "legend";
  const ramp = legend.appendChild(document.createElement("canvas"));
  const scaleText = legend.appendChild(document.createElement("span"));
  const save = legend.appendChild(document.createElement("button"));
  const format = d.download === "svg" ? "svg" : "png";
  save.textContent = `Download ${format.toUpperCase()}`;
  save.onclick = () => {
    // the map as drawn, named by its head: cells scaled without smoothing, then the labels over them (an SVG holds
    // the cells as one image, as Plotly's SVG of a heatmap does, and the labels as text)
    const scale = labels.width / parseFloat(labels.style.width);
    const head = format === "png" ? Math.round(d.font_px * 3.4 * scale) : 0; // the title and source lines
    const out = document.createElement("canvas");
    [out.width, out.height] = [labels.width, labels.height + head];
    const ctx = out.getContext("2d");
    const { left, top, cell } = geometry;
    ctx.imageSmoothingEnabled = false;
    if (format === "png") {
      ctx.fillStyle = "#ffffff";
      ctx.fillRect(0, 0, out.width, out.height);
      ctx.fillStyle = d.text_color;
      ctx.font = `bold ${d.font_px * scale}px sans-serif`;
      ctx.fillText(title.textContent, 4 * scale, d.font_px * 1.2 * scale);
      ctx.font = `${(d.font_px - 1) * scale}px sans-serif`;
      ctx.fillText(d.source || "", 4 * scale, d.font_px * 2.6 * scale, out.width - 8 * scale);
    }
    ctx.drawImage(plot, left * scale, top * scale + head, cell * d.cols * scale, cell * d.rows * scale);
    if (format === "png") ctx.drawImage(labels, 0, head);
    const name = `attention_L${state.layer}_H${state.head}.${format}`;
    const link = document.createElement("a");
    link.download = name;
    link.href = format === "png" ? out.toDataURL("image/png") : URL.createObjectURL(new Blob([svg(out)], { type: "image/svg+xml" }));
    link.click();
  };
  function svg(cells) {
    // the title, the cells and every label drawn (as text a reader can search and a screen reader can read)
    const esc = (t) => t.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
    const { left, top, cell } = geometry;
    const w = parseFloat(labels.style.width), h = parseFloat(labels.style.height);
    const font = `font-family="sans-serif" font-size="${d.font_px}" fill="${esc(d.text_color)}"`;
    const rows = d.q.map((t, i) => `<text x="${left - 4}" y="${top + (i + 0.5) * cell}" text-anchor="end" dominant-baseline="middle">${esc(t)}</text>`);
    const cols = d.k.map((t, j) => `<text transform="translate(${left + (j + 0.5) * cell},${top - 4}) rotate(-60)">${esc(t)}</text>`);
    return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h + d.font_px * 2}" viewBox="0 ${-d.font_px * 2} ${w} ${h + d.font_px * 2}">`
      + `<title>${esc(title.textContent)}</title><rect x="0" y="${-d.font_px * 2}" width="${w}" height="${h + d.font_px * 2}" fill="#ffffff"/>`
      + `<text x="0" y="${-d.font_px * 1.1}" ${font} font-weight="bold">${esc(title.textContent)}</text>`
      + `<text x="0" y="${-d.font_px * 0.1}" ${font}>${esc(d.source || "")}</text>`
      + `<image x="0" y="0" width="${w}" height="${h}" preserveAspectRatio="none" style="image-rendering:pixelated" href="${cells.toDataURL("image/png")}"/>`
      + `<g ${font}>${rows.join("")}${cols.join("")}</g></svg>`;
  }
  paint(ramp, Float32Array.from({ length: 256 }, (_, i) => i / 255), 1, 256, 1, lut);
  box.className = "box";
  tip.className = "tip";
  tip.setAttribute("role", "status");
  plot.className = "cells";
  labels.className = "labels";
  labels.tabIndex = 0;
  const pages = d.layers.length > 1 ? ", Page Up and Page Down another layer" : "";
  labels.setAttribute("aria-label", `Attention map: arrow keys pick another head or token${pages}`);
  caption.className = "caption";
  const bar = (el, label) => {
    el.className = "bar";
    el.setAttribute("role", "toolbar");
    el.setAttribute("aria-label", label);
  };
  if (layerBar) {
    bar(layerBar, "Layers");
    d.layers.forEach((layer) => {
      const b = layerBar.appendChild(document.createElement("button"));
      b.textContent = `L${layer}`;
      b.setAttribute("aria-label", `Layer ${layer}`);
      b.onclick = () => choose({ layer });
    });
  }
  bar(headBar, "Heads");
  headBar.classList.add("heads");
  headBar.classList.toggle("grid", Boolean(d.grid));
  // a button per head: the open layer's (its layer null: the one open), or in a grid every sent layer's, a row each
  const thumbs = [];
  const gridRow = (name) => {
    const line = headBar.appendChild(document.createElement("div"));
    line.appendChild(document.createElement("span")).textContent = name;
    return line;
  };
  if (d.grid) {
    const names = gridRow(""); // the columns' heads
    for (let h = 0; h < d.n_heads; h++) names.appendChild(document.createElement("span")).textContent = `H${h}`;
  }
  for (const layer of d.grid ? d.layers : [null]) {
    const line = d.grid ? gridRow(`L${layer}`) : headBar;
    for (let h = 0; h < d.n_heads; h++) {
      const b = line.appendChild(document.createElement("button"));
      const thumb = b.appendChild(document.createElement("canvas"));
      if (!d.grid) b.appendChild(document.createElement("span")).textContent = `head ${h}`; // in its name "Layer L, head H"
      b.onclick = () => choose(d.grid ? { layer, head: h } : { head: h });
      thumbs.push({ b, thumb, layer, h });
    }
  }

  let geometry = null;
  function draw() {
    const t0 = performance.now();
    const row = rowOf(state.focus), col = colOf(state.focus);
    const { z, top } = head();
    title.textContent = `Layer ${state.layer}, head ${state.head}${d.suffix}`;
    thumbs.forEach(({ b, thumb, layer, h }) => {
      const at = (layer ?? state.layer), index = d.layers.indexOf(at) * d.n_heads + h;
      b.setAttribute("aria-label", `Layer ${at}, head ${h}`);
      b.setAttribute("aria-pressed", String(h === state.head && at === state.layer));
      if (thumb.shows === index) return; // painted already (a resize, a token)
      thumb.shows = index;
      paint(thumb, d.heads[index].z, d.rows, d.cols, d.heads[index].top, lut, d.log);
    });
    layerBar?.querySelectorAll("button").forEach((b, i) => b.setAttribute("aria-pressed", String(d.layers[i] === state.layer)));
    paint(plot, z, d.rows, d.cols, top, lut, d.log);
    const low = d.log ? `${(top / 1e4).toExponential(0)} (log colour)` : "0";
    scaleText.textContent = `${low} … ${top.toFixed(d.digits)} ${d.value_name} (this head's largest)`;
    // the labels: every token while they fit, else every k-th; the highlighted one always
    const font = d.font_px;
    const ctx = labels.getContext("2d");
    ctx.font = `${font}px sans-serif`;
    const widest = (names) => Math.min(180, Math.max(...names.map((n) => ctx.measureText(n).width)) + 8);
    const left = widest(d.q), colText = widest(d.k);
    const full = Math.max(240, root.clientWidth || 600);
    const sizes = (wide) => {
      // the map's cell, label room and size; wide: the heads' buttons in a column of their own beside it
      root.classList.toggle("wide", wide);
      root.style.gridTemplateColumns = "";
      const room = ((wide ? full - side : full) - left - 8 - (colText * 0.5)) / d.cols; // rotated labels lean right
      // the whole view (buttons, heading, labels, map) fits the window's height where it can: a projector shows it
      // on one screen; a long input keeps at least 360 px of map
      // (a projector, ``fill``: the map ends at the first screen's bottom, wherever the view starts on the page)
      const above = d.fill ? box.getBoundingClientRect().top + window.scrollY : box.offsetTop - root.offsetTop;
      const fit = (topPx) => Math.max(d.fill ? 200 : 360, window.innerHeight - above - topPx - (d.fill ? 8 : 48)) / d.rows;
      let cell = Math.max(0.5, Math.min(64, room, fit(font + 8)));
      const rotate = cell < colText;
      const topPx = rotate ? Math.min(140, colText * 0.87 + font) : font + 8;
      if (rotate) cell = Math.max(0.5, Math.min(cell, fit(topPx)));
      return { cell, rotate, topPx, h: topPx + cell * d.rows + 4, w: left + cell * d.cols + (rotate ? colText * 0.5 : 4) };
    };
    const narrow = sizes(false);
    // beside: only if the map stays as large (and keeps 360 px beside a grid)
    const beside = narrow.cell < 64 && full > side + (d.grid ? 360 : SIDE) ? sizes(true) : null;
    const { cell, rotate, topPx, h, w } = beside && beside.cell >= narrow.cell * 0.95 ? beside : sizes(false);
    if (root.classList.contains("wide")) root.style.gridTemplateColumns = `${Math.ceil(w)}px minmax(${side - 24}px, 1fr)`;
    box.style.width = `${w}px`;
    const dpr = window.devicePixelRatio || 1;
    labels.width = Math.round(w * dpr);
    labels.height = Math.round(h * dpr);
    labels.style.width = `${w}px`;
    labels.style.height = `${h}px`;
    Object.assign(plot.style, { left: `${left}px`, top: `${topPx}px`, width: `${cell * d.cols}px`, height: `${cell * d.rows}px` });
    box.style.height = `${h}px`;
    ctx.scale(dpr, dpr);
    ctx.font = `${font}px sans-serif`;
    ctx.fillStyle = d.text_color;
    ctx.textBaseline = "middle";
    const everyRow = labelEvery(cell, font), everyCol = labelEvery(cell, rotate ? font : colText);
    d.q.forEach((name, i) => {
      if (i % everyRow && i !== row) return;
      ctx.font = `${i === row ? "bold " : ""}${font}px sans-serif`;
      ctx.textAlign = "right";
      ctx.fillText(name, left - 4, topPx + (i + 0.5) * cell, left - 6);
    });
    d.k.forEach((name, j) => {
      if (j % everyCol && j !== col) return;
      ctx.save();
      ctx.font = `${j === col ? "bold " : ""}${font}px sans-serif`;
      ctx.translate(left + (j + 0.5) * cell, topPx - 4);
      if (rotate) {
        ctx.rotate(-Math.PI / 3);
        ctx.textAlign = "left";
      } else ctx.textAlign = "center";
      ctx.fillText(name, 0, 0, 170);
      ctx.restore();
    });
    ctx.strokeStyle = "#d62728";
    ctx.lineWidth = 2;
    if (row !== null) ctx.strokeRect(left, topPx + row * cell, cell * d.cols, cell);
    if (col !== null) ctx.strokeRect(left + col * cell, topPx, cell, cell * d.rows);
    geometry = { left, top: topPx, cell };
    root.dataset.drawMs = (performance.now() - t0).toFixed(1);
  }

  function choose(change) {
    Object.assign(state, change);
    if (owns) history.pushState(history.state, "", window.location.href); // a new entry: Back walks the views
    draw();
  }

  function cellAt(event) {
    if (!geometry) return null;
    const r = labels.getBoundingClientRect();
    const col = Math.floor((event.clientX - r.left - geometry.left) / geometry.cell);
    const row = Math.floor((event.clientY - r.top - geometry.top) / geometry.cell);
    return row >= 0 && row < d.rows && col >= 0 && col < d.cols ? { row, col } : null;
  }

  labels.onmousemove = (event) => {
    const at = cellAt(event);
    if (!at) {
      tip.textContent = "";
      tip.hidden = true;
      return;
    }
    const v = head().z[at.row * d.cols + at.col];
    tip.hidden = false;
    const shown = Number.isNaN(v) ? "blocked" : v > 0 && v < d.step / 2 ? `≈${v.toPrecision(2)}` : v.toFixed(d.digits);
    tip.textContent = `${d.q[at.row]} → ${d.k[at.col]}: ${shown}`;
    tip.style.left = `${event.clientX - labels.getBoundingClientRect().left + 12}px`;
    tip.style.top = `${event.clientY - labels.getBoundingClientRect().top + 12}px`;
  };
  labels.onmouseleave = () => (tip.hidden = true);
  labels.onclick = (event) => {
    const at = cellAt(event);
    if (at && d.square) choose({ focus: rowOf(state.focus) === at.row ? null : d.q_first[at.row] });
  };
  labels.onkeydown = (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    const move = { ArrowDown: 1, ArrowUp: -1 }[event.key];
    const page = { PageDown: 1, PageUp: -1 }[event.key], n = d.layers.length;
    if (step) choose({ head: (state.head + step + d.n_heads) % d.n_heads });
    else if (page && n > 1) choose({ layer: d.layers[(layerIndex() + page + n) % n] });
    else if (move && d.square) {
      const next = Math.max(0, Math.min(d.rows - 1, (rowOf(state.focus) ?? -move) + move));
      choose({ focus: d.q_first[next] });
    }
    else return;
    event.preventDefault();
  };
  caption.textContent = d.caption;
  tip.hidden = true;
  const resized = new ResizeObserver(() => draw());
  resized.observe(root);
  state.redraw = draw;
  draw();
  if (owns) history.replaceState(history.state, "", window.location.href); // the address bar says what is drawn
  if (state.pendingClick && !state.untold()) {
    // the server has the view's choice: now the link or download that waited for it
    const held = state.pendingClick;
    state.pendingClick = null;
    setTimeout(() => document.querySelector(held)?.click(), 0);
  }
  return () => {
    resized.disconnect();
    state.live = false; // another page's URL is not this view's; its choice is kept for when it comes back
  };
}
