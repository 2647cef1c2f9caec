// Assemble one print document out of built pages (scripts/build_handouts.py).
// Runs inside a built book page loaded by headless Chromium; `spec` is the product:
//   {title, subtitle, built, cover_html, parts: [{url, slug, title, skip}], appendix,
//    open_details}
// Returns {missing: [labels not found], toc: [...]} once MathJax has typeset.
async (spec) => {
  const missing = [];
  const dropped = [];          // exercises about sections the product leaves out
  const answers = [];          // [{id, qid, part, label, nodes}]
  const esc = (s) => s.replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;",
                                                   ">": "&gt;", '"': "&quot;"}[c]));

  function unwrap(el) {
    el.replaceWith(...el.childNodes);
  }

  function note(text) {
    const p = document.createElement("p");
    p.className = "print-note";
    p.textContent = text;
    return p;
  }

  async function load(part) {
    const resp = await fetch(part.url);
    if (!resp.ok) throw new Error(`${part.url}: HTTP ${resp.status}`);
    const doc = new DOMParser().parseFromString(await resp.text(), "text/html");
    const art = doc.querySelector("article.bd-article") || doc.body;
    const base = new URL(part.url, location.href);
    // sections the product leaves out (a track's "skip" labels)
    // (found first, then removed: a skipped section may hold another)
    const drop = [];
    for (const label of part.skip || []) {
      const el = art.querySelector(`[id="${label}"]`);
      if (!el) { missing.push(`${part.slug}#${label}`); continue; }
      // a section's label is the section or an empty span before its heading; a label
      // on a box (an admonition, a figure) drops that box only
      const heading = el.nextElementSibling && /^H[1-6]$/.test(el.nextElementSibling.tagName);
      drop.push(el.tagName === "SECTION" ? el
        : (heading && el.parentElement.tagName === "SECTION") ? el.parentElement : el);
    }
    // exercises and quick checks that point into a dropped section go with it
    const gone = new Set();
    for (const el of drop) {
      if (el.id) gone.add(el.id);
      el.querySelectorAll("[id]").forEach((x) => gone.add(x.id));
    }
    drop.forEach((el) => el.remove());
    for (const box of art.querySelectorAll(".exercise, .quick-check")) {
      const refs = Array.from(box.querySelectorAll("a[href^='#']"),
                             (a) => decodeURIComponent(a.getAttribute("href").slice(1)));
      if (!refs.some((r) => gone.has(r))) continue;
      let next = box.nextElementSibling;
      if (next && next.classList.contains("solution")) next.remove();
      box.remove();
      part.dropped = (part.dropped || 0) + 1;
      dropped.push(`${part.slug}: ${box.querySelector(".admonition-title")?.textContent.trim()}`);
    }
    // absolute addresses, so that images and links resolve in the host page
    for (const el of art.querySelectorAll("[src]")) {
      el.setAttribute("src", new URL(el.getAttribute("src"), base).href);
    }
    for (const el of art.querySelectorAll("a[href]")) {
      el.setAttribute("href", new URL(el.getAttribute("href"), base).href);
    }
    // web-only furniture: heading anchors, copy buttons, scripts
    art.querySelectorAll("a.headerlink, button, script, .copybtn, .toggle-button")
      .forEach((el) => el.remove());
    // code toggles: a hidden input goes, a hidden output is shown without its toggle
    for (const d of art.querySelectorAll("details.hide, details.above-input, details.below-input")) {
      if (d.classList.contains("above-input")) { d.remove(); continue; }
      d.querySelector(":scope > summary")?.remove();
      unwrap(d);
    }
    // interactive explorers: the static figure next to them stays, the controls go
    for (const el of art.querySelectorAll(".gpulab-chart, .jupyter-widgets, " +
        ".widget-subarea, [data-mime-type*='widget'], .output_widget_view")) {
      const out = el.closest(".cell_output") || el;
      const cell = out.closest(".cell") || out;
      const before = cell.previousElementSibling;
      const figure = before && before.querySelector && before.querySelector("figure");
      out.replaceWith(note(figure
        ? "Interactive in the web book: open this chapter online to change its " +
          "inputs; the figure above is its initial state."
        : "Interactive in the web book: open this chapter online to change its inputs " +
          "(the static figures of this chapter show the same model)."));
    }
    art.querySelectorAll("form, input, select, textarea, .vega-bindings")
      .forEach((el) => el.remove());
    // ids unique across the assembled document
    for (const el of art.querySelectorAll("[id]")) {
      el.id = `${part.slug}--${el.id}`;
    }
    const wrap = document.createElement("section");
    wrap.className = "hpart";
    wrap.id = `p-${part.slug}`;
    wrap.dataset.url = base.href.split("#")[0];
    wrap.dataset.slug = part.slug;
    wrap.append(...art.childNodes);
    if (part.page_class) wrap.classList.add(part.page_class);
    return wrap;
  }

  function collectAnswers(wrap, title) {
    // quick checks: every "Reveal the answer" dropdown
    for (const d of wrap.querySelectorAll("details.sd-dropdown")) {
      const n = answers.length + 1;
      const qc = d.closest(".quick-check, .admonition");
      const label = qc?.querySelector(".admonition-title")?.textContent.trim() ||
                    "Quick check";
      const body = d.querySelector(".sd-summary-content") || d;
      const qid = qc ? (qc.id ||= `q-${n}`) : `q-${n}`;
      answers.push({id: `ans-${n}`, qid, part: title, label, nodes: [...body.childNodes]});
      const ref = document.createElement("p");
      ref.className = "print-answer-ref";
      ref.innerHTML = `Answer: <a href="#ans-${n}">A.${n}</a>, page ` +
                      `<span data-pageref="ans-${n}">00</span>.`;
      d.replaceWith(ref);
    }
    // exercise solutions
    for (const sol of wrap.querySelectorAll(".solution")) {
      const n = answers.length + 1;
      let ex = sol.previousElementSibling;
      while (ex && !ex.classList.contains("exercise")) ex = ex.previousElementSibling;
      const label = ex?.querySelector(".admonition-title")?.textContent.trim() ||
                    "Exercise";
      const qid = ex ? (ex.id ||= `q-${n}`) : `q-${n}`;
      sol.querySelector(":scope > .admonition-title")?.remove();
      answers.push({id: `ans-${n}`, qid, part: title, label: `Solution: ${label}`,
                    nodes: [...sol.childNodes]});
      const ref = document.createElement("p");
      ref.className = "print-answer-ref";
      ref.innerHTML = `Solution: <a href="#ans-${n}">A.${n}</a>, page ` +
                      `<span data-pageref="ans-${n}">00</span>.`;
      sol.replaceWith(ref);
    }
  }

  // ---- assemble ----
  const parts = [];
  for (const part of spec.parts) {
    const wrap = await load(part);
    const h1 = wrap.querySelector("h1");
    const title = part.title || (h1 ? h1.textContent.trim() : part.slug);
    if (spec.appendix) collectAnswers(wrap, title);
    if (spec.open_details) {
      for (const d of wrap.querySelectorAll("details")) {
        d.open = true;
        d.querySelector(":scope > summary .sd-summary-state-marker")?.remove();
      }
    }
    parts.push({wrap, title, slug: part.slug});
  }

  const doc = document.createElement("div");
  doc.className = "handout";
  doc.insertAdjacentHTML("beforeend", spec.cover_html);

  // printed contents: every part and its second-level headings
  const toc = document.createElement("nav");
  toc.className = "print-toc";
  toc.id = "contents";
  let rows = "";
  const tocData = [];
  for (const p of parts) {
    rows += `<li class="toc-part"><a href="#${p.wrap.id}">${esc(p.title)}</a>` +
            `<span class="toc-page" data-pageref="${p.wrap.id}">00</span></li>`;
    tocData.push({id: p.wrap.id, title: p.title, level: 1});
    for (const h2 of p.wrap.querySelectorAll("section > h2")) {
      // the heading itself is the target: its section may start on the page before
      const sec = h2.parentElement;
      if (!sec.id) continue;
      h2.id ||= `${sec.id}--h`;
      const t = h2.textContent.trim();
      rows += `<li class="toc-sec"><a href="#${h2.id}">${esc(t)}</a>` +
              `<span class="toc-page" data-pageref="${h2.id}">00</span></li>`;
      tocData.push({id: h2.id, title: t, level: 2});
    }
  }
  if (spec.appendix && answers.length) {
    rows += `<li class="toc-part"><a href="#appendix">Appendix: answers and solutions</a>` +
            `<span class="toc-page" data-pageref="appendix">00</span></li>`;
    tocData.push({id: "appendix", title: "Appendix: answers and solutions", level: 1});
  }
  toc.innerHTML = `<h1>Contents</h1><ol>${rows}</ol>`;
  doc.append(toc);
  for (const p of parts) doc.append(p.wrap);

  if (spec.appendix && answers.length) {
    const app = document.createElement("section");
    app.className = "hpart appendix";
    app.id = "appendix";
    app.innerHTML = "<h1>Appendix: answers and solutions</h1>" +
      "<p>Quick-check answers and exercise solutions, in the order of the chapters. " +
      "Commit to an answer before you look here.</p>";
    let current = null;
    for (const a of answers) {
      if (a.part !== current) {
        current = a.part;
        app.insertAdjacentHTML("beforeend", `<h2>${esc(a.part)}</h2>`);
      }
      const div = document.createElement("div");
      div.className = "print-answer";
      div.id = a.id;
      div.innerHTML = `<p class="print-answer-title"><b>A.${a.id.slice(4)}</b> ` +
        `${esc(a.label)} <span class="print-back">(question on page ` +
        `<a href="#${a.qid}"><span data-pageref="${a.qid}">00</span></a>)</span></p>`;
      div.append(...a.nodes);
      app.append(div);
    }
    doc.append(app);
  }

  // links: to a part of this document, or plain text (no dead links in print)
  const byUrl = new Map(parts.map((p) => [p.wrap.dataset.url, p.slug]));
  for (const a of doc.querySelectorAll("a[href]")) {
    const href = a.getAttribute("href");
    if (href.startsWith("#")) continue;
    let u;
    try { u = new URL(href); } catch { unwrap(a); continue; }
    const key = u.href.split("#")[0];
    if (u.origin === location.origin) {
      const slug = byUrl.get(key);
      const target = slug && (u.hash ? `${slug}--${decodeURIComponent(u.hash.slice(1))}`
                                      : `p-${slug}`);
      if (target && doc.querySelector(`[id="${CSS.escape(target)}"]`)) {
        a.setAttribute("href", `#${target}`);
      } else {
        unwrap(a);
      }
    }
  }

  document.title = spec.title + (spec.subtitle ? ` — ${spec.subtitle}` : "");
  document.body.className = "handout-body";
  document.body.innerHTML = "";
  const shell = document.createElement("div");
  shell.className = "bd-main";
  shell.innerHTML = '<div class="bd-content"><div class="bd-article-container">' +
                    '<article class="bd-article"></article></div></div>';
  shell.querySelector("article").append(doc);
  document.body.append(shell);

  // typeset the math of every part, then wait for images and fonts
  if (window.MathJax && MathJax.typesetPromise) {
    await MathJax.startup.promise;
    MathJax.typesetClear();
    await MathJax.typesetPromise([doc]);
  }
  await Promise.all(Array.from(document.images).map((img) => img.complete ? null :
    new Promise((r) => { img.onload = img.onerror = r; })));
  await document.fonts.ready;

  // wide tables, code and display equations: shrink to the text width
  const width = doc.getBoundingClientRect().width;
  let shrunk = 0;
  for (const el of doc.querySelectorAll("table, mjx-container[display='true'], pre")) {
    const w = el.scrollWidth;
    if (w > width + 1) {
      el.style.zoom = Math.max(0.45, width / w).toFixed(3);
      shrunk += 1;
    }
  }
  const broken = Array.from(document.images).filter(
    (img) => !(img.complete && img.naturalWidth > 0)).map((img) => img.src);
  const raw = Array.from(doc.querySelectorAll(".math")).filter(
    (el) => !el.querySelector("mjx-container") && /\\\(|\\\[|\$/.test(el.textContent)).length;
  const headings = Array.from(doc.querySelectorAll(".hpart h1, .hpart h2, .hpart h3, .hpart h4"),
                             (h) => h.textContent.trim());
  return {missing, toc: tocData, headings, dropped, answers: answers.length, broken, raw, shrunk};
}
