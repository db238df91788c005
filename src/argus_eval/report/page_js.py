"""The page's inline JavaScript (plain JS, no libraries besides the inlined plotly.js).

It draws the charts, renders and filters the gallery, and records the outcome on <body> so that a
headless browser can check it: data-charts="ok" | "error" | "unavailable", data-charts-rendered (the
number of chart divs holding a plotly svg), data-gallery-rendered, data-js-error. Untrusted text goes
into the DOM with textContent only.
"""

from __future__ import annotations

# Registered first, in <head>, so errors anywhere on the page are recorded.
ERROR_HOOK = """
window.addEventListener('error', function (e) {
  document.documentElement.setAttribute('data-js-error', String(e.message || e));
});
"""

APP = r"""
(function () {
  'use strict';
  var body = document.body;
  var payload = JSON.parse(document.getElementById('argus-data').textContent);

  function el(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) { n.className = cls; }
    if (text !== undefined && text !== null) { n.textContent = String(text); }
    return n;
  }

  // ---- charts ----
  function drawCharts() {
    var charts = payload.charts;
    body.setAttribute('data-charts-expected', String(charts.length));
    if (typeof Plotly === 'undefined') {
      body.setAttribute('data-charts', charts.length ? 'unavailable' : 'ok');
      body.setAttribute('data-charts-rendered', '0');
      return;
    }
    var pending = [];
    var errors = [];
    charts.forEach(function (c) {
      try {
        pending.push(Plotly.newPlot(c.id, c.data, c.layout, {displaylogo: false, responsive: true}));
      } catch (e) {
        errors.push(c.id + ': ' + e.message);
      }
    });
    Promise.all(pending).then(function () {
      var drawn = charts.filter(function (c) {
        var div = document.getElementById(c.id);
        return div && div.querySelector('svg.main-svg');
      }).length;
      body.setAttribute('data-charts-rendered', String(drawn));
      if (errors.length) { body.setAttribute('data-chart-error', errors.join('; ')); }
      body.setAttribute('data-charts', !errors.length && drawn === charts.length ? 'ok' : 'error');
    }, function (e) {
      body.setAttribute('data-chart-error', String(e && e.message || e));
      body.setAttribute('data-charts', 'error');
    });
  }

  // ---- gallery ----
  var FILTERS = ['model', 'task', 'dataset', 'condition'];

  function fillFilters(items) {
    FILTERS.forEach(function (f) {
      var select = document.getElementById('filter-' + f);
      var seen = {};
      items.forEach(function (it) { seen[it[f]] = true; });
      Object.keys(seen).sort().forEach(function (v) {
        var o = el('option', null, v);
        o.value = v;
        select.appendChild(o);
      });
      select.addEventListener('change', renderGallery);
    });
  }

  function card(it) {
    var c = el('div', 'card');
    if (it.thumb && payload.thumbnails[it.thumb]) {
      var pics = el('div', 'pics');
      function pic(id, label) {
        var fig = el('figure', 'pic');
        var img = el('img', 'thumb');
        img.src = payload.thumbnails[id];
        img.alt = label + ' image of sample ' + it.sample_id;
        fig.appendChild(img);
        fig.appendChild(el('figcaption', 'sub', label));
        pics.appendChild(fig);
      }
      pic(it.thumb, 'clean');
      if (it.thumb_perturbed && payload.thumbnails[it.thumb_perturbed]) {
        pic(it.thumb_perturbed, it.condition);
      }
      c.appendChild(pics);
    } else {
      c.appendChild(el('div', 'thumb nothumb', 'no image'));
    }
    var t = el('div', 'cardtext');
    var head = it.model + ' \u00b7 ' + it.task + ' / ' + it.dataset + ' \u00b7 ' + it.condition;
    t.appendChild(el('div', 'cardhead', head));
    t.appendChild(el('div', 'score', it.score === null ? 'failed' : 'score ' + it.score.toFixed(3)));
    function field(label, value, cls) {
      if (value === null || value === undefined || value === '') { return; }
      var row = el('div', 'field ' + (cls || ''));
      row.appendChild(el('span', 'label', label + ': '));
      row.appendChild(el('span', 'value', value));
      t.appendChild(row);
    }
    field('sample', it.sample_id);
    field('question', it.question);
    field('prediction', it.prediction, 'pred');
    field('reference', it.reference.length ? it.reference.join('\n') : null);
    field('error', it.error, 'err');
    if (it.perturbed_view && it.thumb && !it.thumb_perturbed) {
      t.appendChild(el('div', 'hint', 'perturbed image could not be rebuilt; clean image shown'));
    }
    c.appendChild(t);
    return c;
  }

  function renderGallery() {
    var want = {};
    FILTERS.forEach(function (f) { want[f] = document.getElementById('filter-' + f).value; });
    var box = document.getElementById('gallery-items');
    while (box.firstChild) { box.removeChild(box.firstChild); }
    var shown = 0;
    payload.gallery.forEach(function (it) {
      for (var i = 0; i < FILTERS.length; i++) {
        var f = FILTERS[i];
        if (want[f] !== '' && it[f] !== want[f]) { return; }
      }
      box.appendChild(card(it));
      shown += 1;
    });
    document.getElementById('gallery-count').textContent = shown + ' of ' + payload.gallery.length + ' shown';
    body.setAttribute('data-gallery-rendered', String(shown));
  }

  fillFilters(payload.gallery);
  renderGallery();
  drawCharts();
})();
"""
