// polyg graph view. Plain JS, no build step. The same file runs in two places:
// - "page": the HTTP app's /ui page, which asks the server's /ui/api JSON views;
// - "app":  an MCP App (SEP-1865) inside an MCP client, which receives the tool result the host
//           hands it and calls the server's tools through the host (postMessage JSON-RPC).
// Every name, observation or fact reaches the DOM as text (textContent, never innerHTML), and the
// graph's labels are drawn on a canvas: nothing the graph holds is ever parsed as HTML.
(function () {
  "use strict";

  const boot = JSON.parse(document.getElementById("polyg-boot").textContent);
  const $ = (id) => document.getElementById(id);
  const state = { project: boot.project || null, selected: null, center: null, pending: 0, tab: "entity", toolArgs: {} };
  window.polygView = state; // read by the browser tests and the screenshot script

  // --- small DOM helpers ------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function show(target, ...nodes) { target.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined)); }
  function errorBox(err) { return el("p", { class: "error" }, String(err && err.message ? err.message : err)); }
  function busy(delta) {
    state.pending += delta;
    document.body.dataset.busy = state.pending > 0 ? "1" : "0";
  }
  function status(text) { $("status").textContent = text; }
  // A stored time as people read it: the date alone at midnight, else date and minutes (UTC).
  function when(iso) {
    if (!iso) return "";
    const text = String(iso);
    return /T00:00:00(\.0+)?Z$/.test(text) ? text.slice(0, 10) : text.replace("T", " ").slice(0, 16) + (text.endsWith("Z") ? " UTC" : "");
  }

  // --- the two backends -------------------------------------------------------------------
  async function pageView(view, params) {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") query.set(k, v);
    const url = `${boot.base}/api/p/${encodeURIComponent(state.project)}/${view}?${query}`;
    const response = await fetch(url, { headers: { Accept: "application/json" } });
    const body = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
    if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
    return body;
  }

  let rpcId = 0;
  const waiting = new Map();
  function hostRequest(method, params) {
    const id = ++rpcId;
    window.parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
    return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
  }
  function hostNotify(method, params) { window.parent.postMessage({ jsonrpc: "2.0", method, params: params || {} }, "*"); }
  async function callTool(name, args) {
    if (state.project) args = Object.assign({ project_id: state.project }, args);
    const result = await hostRequest("tools/call", { name, arguments: args });
    if (result.isError) throw new Error(((result.content || [])[0] || {}).text || `${name} failed`);
    return result.structuredContent || {};
  }

  // Each returns the tool's own result shape, whichever backend answers.
  const backend = boot.mode === "app" ? {
    search: async (q) => ({ results: ((await callTool("list_entities", { name_contains: q })).entities || [])
      .map((e) => ({ id: e.id, kind: "entity", text: e.name, type: e.type })) }),
    // No build_local_graph here: the host may serve only the default toolsets, which have get_entity.
    neighbourhood: async (node) => graphFromEntity(await callTool("get_entity", { name: node.name })),
    entity: (node, asOf, history) => callTool("get_entity", Object.assign({ name: node.name, include_history: history }, asOf ? { as_of: asOf } : {})),
    timeline: (node) => callTool("query_timeline", { entity: node.name }),
    causal: (node) => callTool("get_causal_chain", { event: node.name, direction: "both" }),
    document: (node) => callTool("generate_documents", { node_identifiers: [node.id] }),
  } : {
    search: (q) => pageView("search", { q }),
    neighbourhood: (node) => pageView("neighbourhood", { entity_id: node.id }),
    entity: (node, asOf, history) => pageView("entity", { name: node.name, as_of: asOf, history: history ? "1" : "" }),
    timeline: (node) => pageView("timeline", { entity: node.name }),
    causal: (node) => pageView("causal", { event: node.name }),
    document: (node) => pageView("document", { node: node.id }),
  };

  // get_entity's answer as a neighbourhood: the entity and the entities its relationships reach.
  function graphFromEntity(result) {
    const e = result.entity;
    const nodes = [{ id: e.id, name: e.name, entity_type: e.type, tier: "core" }];
    const edges = [];
    for (const r of result.relationships || []) {
      nodes.push({ id: r.entity.id, name: r.entity.name, entity_type: r.entity.type, tier: "supporting" });
      const out = r.direction === "outgoing";
      edges.push({ id: r.id, from_entity_id: out ? e.id : r.entity.id, to_entity_id: out ? r.entity.id : e.id, relation_type: r.relationship || r.type });
    }
    return { center: e.id, graph: { nodes, edges, truncated: false }, capped: !!result.has_more, shown: nodes.length - 1 };
  }

  // --- the graph --------------------------------------------------------------------------
  const TIER_COLOURS = { core: "#3b6fd8", supporting: "#58a6a6", peripheral: "#a0a8b8" };
  const cy = cytoscape({
    container: $("cy"),
    wheelSensitivity: 0.3,
    style: [
      { selector: "node", style: {
        "background-color": (n) => TIER_COLOURS[n.data("tier")] || "#a0a8b8",
        label: "data(label)", "font-size": 10, "text-valign": "bottom", "text-margin-y": 3,
        "text-wrap": "ellipsis", "text-max-width": 120, width: 22, height: 22 } },
      { selector: "node.center", style: { "border-width": 3, "border-color": "#1d2430", width: 30, height: 30 } },
      { selector: "node:selected", style: { "border-width": 3, "border-color": "#e07a1f" } },
      { selector: "edge", style: {
        width: 1.5, "line-color": "#b7c3d9", "target-arrow-color": "#b7c3d9", "target-arrow-shape": "triangle",
        "curve-style": "bezier", label: "data(label)", "font-size": 8, color: "#5b6578", "text-rotation": "autorotate" } },
      { selector: "edge.causal", style: { "line-color": "#e07a1f", "target-arrow-color": "#e07a1f" } },
    ],
  });
  state.cy = cy;

  function addGraph(graph) {
    const added = [];
    for (const n of graph.nodes || []) {
      if (!n.id || cy.getElementById(n.id).nonempty()) continue;
      added.push({ group: "nodes", data: { id: n.id, label: n.name || n.id, name: n.name, type: n.entity_type, tier: n.tier } });
    }
    for (const e of graph.edges || []) {
      const id = e.id || `${e.from_entity_id}->${e.to_entity_id}:${e.relation_type}`;
      if (!e.from_entity_id || !e.to_entity_id || cy.getElementById(id).nonempty()) continue;
      added.push({ group: "edges", data: { id, source: e.from_entity_id, target: e.to_entity_id, label: e.relation_type },
                   classes: e.is_causal ? "causal" : "" });
    }
    cy.add(added.filter((x) => x.group === "nodes"));
    // An edge whose end is not drawn (a neighbour left out by the cap) is left out too.
    cy.add(added.filter((x) => x.group === "edges" && cy.getElementById(x.data.source).nonempty() && cy.getElementById(x.data.target).nonempty()));
    return added.length;
  }

  function layout() {
    cy.layout({ name: cy.nodes().length > 1 ? "cose" : "grid", animate: false, randomize: false, nodeDimensionsIncludeLabels: true, padding: 30 }).run();
    cy.fit(undefined, 30);
    if (cy.zoom() > 1.4) { cy.zoom(1.4); cy.center(); } // a few nodes are not drawn huge
  }

  function notice(result) {
    const parts = [];
    if (result.capped) parts.push(`Neighbourhood capped: showing ${result.shown} neighbours, more exist.`);
    if (result.graph && result.graph.truncated) parts.push("Relationships capped: not all are drawn.");
    $("notice").textContent = parts.join(" ");
  }

  function nodeOf(id) {
    const n = cy.getElementById(id);
    return n.nonempty() ? { id, name: n.data("name") || id } : { id, name: id };
  }

  async function openEntity(node, fresh) {
    busy(1);
    try {
      const result = await backend.neighbourhood(node);
      if (fresh) cy.elements().remove();
      addGraph(result.graph);
      cy.nodes().removeClass("center");
      cy.getElementById(result.center || node.id).addClass("center");
      state.center = result.center || node.id;
      notice(result);
      layout();
      $("empty").hidden = cy.nodes().length > 0;
      status(`${cy.nodes().length} entities, ${cy.edges().length} relationships`);
      await select(nodeOf(state.center));
    } catch (err) {
      show($("view-entity"), errorBox(err));
      selectTab("entity");
    } finally {
      busy(-1);
    }
  }

  cy.on("tap", "node", (event) => openEntity(nodeOf(event.target.id()), false));

  // --- the details panel ------------------------------------------------------------------
  async function select(node) {
    state.selected = node;
    state.causalFor = null; // the causal tab shows the entity's own chain until an event is chosen
    cy.nodes().unselect();
    cy.getElementById(node.id).select();
    await renderTab();
  }

  function selectTab(name) {
    state.tab = name;
    for (const b of $("tabs").querySelectorAll("button")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
    for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== `view-${name}`;
  }

  async function renderTab() {
    const node = state.selected;
    const view = $(`view-${state.tab}`);
    if (!node) { show(view, el("p", { class: "muted" }, "Open an entity to see it here.")); return; }
    busy(1);
    try {
      if (state.tab === "entity") renderEntity(await backend.entity(node, $("asof").value, $("history").checked));
      else if (state.tab === "timeline") renderTimeline(await backend.timeline(node), node.name);
      else if (state.tab === "causal") renderChain(await backend.causal(state.causalFor || node));
      else if (state.tab === "document") renderDocuments(await backend.document(node));
    } catch (err) {
      show(view, errorBox(err));
    } finally {
      busy(-1);
    }
  }

  function validity(r, at) {
    const now = at || new Date().toISOString();
    if (!r.valid_from && !r.valid_to) return null;
    if (r.valid_from && r.valid_from > now) return el("span", { class: "badge pending" }, "not yet");
    if (r.valid_to && r.valid_to <= now) return el("span", { class: "badge ended" }, "ended");
    return el("span", { class: "badge current" }, "holds");
  }

  function renderEntity(result) {
    const e = result.entity;
    const asOf = $("asof").value;
    const rows = (result.relationships || []).map((r) => el("tr", {},
      el("td", {}, r.direction === "outgoing" ? `${r.relationship || r.type} →` : `← ${r.relationship || r.type}`),
      el("td", {}, r.entity.name),
      el("td", { class: "valid" }, when(r.valid_from), r.valid_to ? ` – ${when(r.valid_to)}` : r.valid_from ? " –" : "", " ",
        validity(r, asOf ? `${asOf}T23:59:59Z` : null))));
    const observations = e.observations || [];
    show($("view-entity"),
      el("h2", {}, e.name),
      el("p", { class: "muted" }, e.type || "", e.description ? ` · ${e.description}` : ""),
      el("h2", {}, asOf ? `Facts and links as of ${asOf}` : ($("history").checked ? "All facts and links" : "Facts and links now")),
      rows.length ? el("table", {}, el("tr", {}, el("th", {}, "relationship"), el("th", {}, "entity"), el("th", {}, "valid")), rows)
                  : el("p", { class: "muted" }, "None."),
      el("h2", {}, "Observations"),
      observations.length ? el("ul", {}, observations.map((o) => el("li", {}, typeof o === "string" ? o : o.text || o.content || JSON.stringify(o))))
                          : el("p", { class: "muted" }, "None."),
      el("h2", {}, "Latest events"),
      (result.events || []).length ? el("ul", { class: "timeline" }, result.events.map((ev) => el("li", {}, el("strong", {}, when(ev.occurred_at)), " ", ev.description)))
                                   : el("p", { class: "muted" }, "None."));
  }

  function renderTimeline(result, subject) {
    const items = result.items || [];
    show($("view-timeline"),
      el("h2", {}, subject ? `Timeline of ${subject}` : "Timeline"),
      items.length ? el("ul", { class: "timeline" }, items.map((item) => item.kind === "event"
        ? el("li", { class: "event" }, el("strong", {}, when(item.at)), " ", item.event.description, " ",
             el("button", { class: "link", "data-event": item.event.id, onclick: () => openChain(item.event) }, "causes & effects"))
        : el("li", { class: "fact" }, el("strong", {}, when(item.at)), " ", item.fact ? `${item.fact.subject} ${item.fact.predicate} ${item.fact.object}` : "fact",
             item.fact && item.fact.valid_to ? el("span", { class: "muted" }, ` (until ${when(item.fact.valid_to)})`) : null)))
        : el("p", { class: "muted" }, "Nothing on the timeline."),
      result.has_more ? el("p", { class: "muted" }, "More items follow (the timeline is paged).") : null);
  }

  function openChain(event) {
    state.causalFor = { id: event.id, name: event.id };
    selectTab("causal");
    renderTab();
  }

  // A causal chain as a chain: columns from the farthest cause to the farthest effect.
  function renderChain(result) {
    const columns = new Map([[0, [result.start]]]);
    for (const n of result.nodes || []) {
      if (n.direction === "start" || n.id === result.start.id) continue; // drawn once, in the middle
      const at = n.direction === "upstream" ? -n.distance : n.distance;
      if (!columns.has(at)) columns.set(at, []);
      columns.get(at).push(n);
    }
    const order = [...columns.keys()].sort((a, b) => a - b);
    const chain = el("div", { class: "chain" });
    order.forEach((at, i) => {
      if (i > 0) chain.append(el("span", { class: "arrow" }, "↓"));
      chain.append(el("div", { class: "column" }, columns.get(at).map((n) => el("div", { class: at === 0 ? "step start" : "step" },
        el("div", {}, n.text || n.id), n.occurred_at ? el("div", { class: "muted" }, when(n.occurred_at)) : null,
        n.confidence !== undefined && at !== 0 ? el("div", { class: "muted" }, `confidence ${Number(n.confidence).toFixed(2)}`) : null))));
    });
    show($("view-causal"),
      el("h2", {}, "Causal chain (causes ↓ effects)"),
      order.length > 1 ? chain : el("p", { class: "muted" }, `No causes or effects recorded for ${result.start.text || state.selected.name}.`),
      order.length > 1 ? null : el("p", { class: "muted" }, "Choose an event on the timeline to see its chain."),
      (result.cycles || []).length ? el("p", { class: "muted" }, "Cycles were found and not followed.") : null);
  }

  function renderDocuments(result) {
    const docs = result.documents || [];
    show($("view-document"),
      el("h2", {}, "Knowledge document"),
      docs.length ? docs.map((d) => [el("p", { class: "muted" }, `${d.node_name} · template ${d.template_used}`), el("pre", { class: "document" }, d.content)])
                  : el("p", { class: "muted" }, "No document."));
  }

  // --- search -----------------------------------------------------------------------------
  async function search(query) {
    if (!query || !state.project) return;
    busy(1);
    try {
      const result = await backend.search(query);
      const hits = (result.results || []).filter((r) => r.kind !== "event");
      show($("hits"), hits.length ? hits.map((h) => el("button", { "data-id": h.id, onclick: () => openEntity({ id: h.id, name: h.text }, true) },
        h.text, el("small", {}, `${h.kind}${h.type ? ` · ${h.type}` : ""}`))) : el("p", { class: "muted" }, "No match."));
    } catch (err) {
      show($("hits"), errorBox(err));
    } finally {
      busy(-1);
    }
  }

  // --- wiring -----------------------------------------------------------------------------
  $("search-form").addEventListener("submit", (event) => { event.preventDefault(); search($("query").value.trim()); });
  for (const b of $("tabs").querySelectorAll("button")) b.addEventListener("click", () => { selectTab(b.dataset.tab); renderTab(); });
  $("asof").addEventListener("change", () => { selectTab("entity"); renderTab(); });
  $("history").addEventListener("change", () => { selectTab("entity"); renderTab(); });
  selectTab("entity");
  busy(0);

  // A tool result handed over by an MCP host, drawn by its shape.
  async function drawToolResult(result) {
    const data = result.structuredContent || {};
    if (data.graph && data.graph.nodes) {
      cy.elements().remove();
      addGraph(data.graph);
      notice({ graph: data.graph });
      layout();
      $("empty").hidden = cy.nodes().length > 0;
      if (data.graph.nodes.length) await select(nodeOf(data.graph.nodes[0].id));
    } else if (data.entity && data.entity.id) {
      const graph = graphFromEntity(data);
      cy.elements().remove();
      addGraph(graph.graph);
      cy.getElementById(graph.center).addClass("center");
      layout();
      $("empty").hidden = true;
      state.selected = nodeOf(graph.center);
      selectTab("entity");
      renderEntity(data);
    } else if (data.start && data.links) {
      state.selected = { id: data.start.id, name: data.start.text };
      selectTab("causal");
      renderChain(data);
    } else if (data.items) {
      selectTab("timeline");
      renderTimeline(data, state.toolArgs.entity); // the entity the call asked about, if any
    }
  }

  if (boot.mode === "app") {
    $("project-form").hidden = true;
    document.body.style.minHeight = "560px";
    window.addEventListener("message", (event) => {
      if (event.source !== window.parent) return;
      const msg = event.data || {};
      if (msg.id !== undefined && waiting.has(msg.id) && (msg.result !== undefined || msg.error !== undefined)) {
        const { resolve, reject } = waiting.get(msg.id);
        waiting.delete(msg.id);
        if (msg.error) reject(new Error(msg.error.message || "request failed")); else resolve(msg.result);
      } else if (msg.method && msg.id !== undefined) {
        // A request from the host: teardown and ping need only an answer; nothing else is served.
        const known = msg.method === "ui/resource-teardown" || msg.method === "ping";
        window.parent.postMessage(known ? { jsonrpc: "2.0", id: msg.id, result: {} }
          : { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: `Unknown method ${msg.method}` } }, "*");
      } else if (msg.method === "ui/notifications/tool-input") {
        const args = (msg.params && msg.params.arguments) || {};
        state.toolArgs = args;
        if (args.project_id) state.project = args.project_id;
      } else if (msg.method === "ui/notifications/tool-result") {
        drawToolResult(msg.params || {});
      }
    });
    hostRequest("ui/initialize", {
      protocolVersion: "2026-01-26",
      appInfo: { name: "polyg-graph", version: boot.version || "0" },
      appCapabilities: {},
    }).then(() => {
      hostNotify("ui/notifications/initialized");
      // The view's own height (it fills what it is given): hosts that size the frame to its content.
      hostNotify("ui/notifications/size-changed", { height: document.documentElement.scrollHeight });
    }, () => status("No MCP host answered."));
  } else {
    $("project").value = state.project || "";
    $("project-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const project = $("project").value.trim();
      if (project) window.location.href = `${boot.base}/p/${encodeURIComponent(project)}`;
    });
    if (!state.project) {
      $("query").disabled = true;
      show($("hits"), el("p", { class: "muted" }, "Choose a project."),
        el("ul", { class: "plain" }, (boot.projects || []).map((p) => el("li", {}, el("a", { href: `${boot.base}/p/${encodeURIComponent(p)}` }, p)))));
    }
    if (boot.entity) openEntity({ id: boot.entity.id, name: boot.entity.name }, true);
  }
})();
