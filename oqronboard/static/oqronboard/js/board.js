/*
 * OqronBoard's only script (the Content-Security-Policy allows no inline script).
 *
 * - Live panels ([data-poll]) poll with htmx at the interval the user picks (off, 2, 5,
 *   15 s; a cookie the server reads, so the choice survives reloads), skip a poll while
 *   the tab is hidden or while the previous one is still in flight, and refresh at once
 *   when the tab comes back or an action fires "board:refresh".
 * - Keyboard: "/" focuses the search box, "j"/"k" move through a list, Enter opens the
 *   selected row, "r" retries the selected dead job (operators only; the server checks
 *   the permission again).
 */
(function () {
  "use strict";

  var POLL_COOKIE = "oqron_poll";
  var REFRESH = "board:refresh from:body";

  function pollTrigger(interval) {
    return interval === "off" ? REFRESH : "every " + interval + "s, " + REFRESH;
  }

  function setInterval_(interval) {
    document.cookie = POLL_COOKIE + "=" + encodeURIComponent(interval) + "; path=/; max-age=31536000; SameSite=Lax";
    document.querySelectorAll("[data-poll]").forEach(function (panel) {
      panel.setAttribute("hx-trigger", pollTrigger(interval));
      if (window.htmx) { window.htmx.process(panel); }  // re-initialises the trigger
    });
  }

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target.matches && target.matches("[data-poll-interval]")) {
      setInterval_(target.value);
    } else if (target.closest && target.closest("form[data-autosubmit]") && target.tagName === "SELECT") {
      target.form.submit();
    }
  });

  // No poll from a hidden tab, and never two at once from one panel.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var source = event.detail && event.detail.elt;
    if (!source || !source.hasAttribute || !source.hasAttribute("data-poll")) { return; }
    if (document.hidden || source.classList.contains("htmx-request")) {
      event.preventDefault();
    }
  });

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && window.htmx) {
      window.htmx.trigger(document.body, "board:refresh");
    }
  });

  // -- keyboard --------------------------------------------------------------------------

  var selectedIndex = -1;

  function typing(element) {
    if (!element) { return false; }
    var tag = element.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || element.isContentEditable;
  }

  function rows() {
    var list = document.querySelector("[data-list] tr.selected") ?
      document.querySelector("tr.selected").closest("[data-list]") : document.querySelector("[data-list]");
    return list ? Array.prototype.slice.call(list.querySelectorAll("tr[data-row]")) : [];
  }

  function select(index) {
    var all = rows();
    if (!all.length) { return; }
    index = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (row) { row.classList.remove("selected"); row.removeAttribute("aria-selected"); });
    var row = all[index];
    row.classList.add("selected");
    row.setAttribute("aria-selected", "true");
    row.scrollIntoView({ block: "nearest" });
    selectedIndex = index;
  }

  // A swap may replace the selected row (a retried dead letter): keep the position.
  document.addEventListener("htmx:afterSettle", function () {
    if (selectedIndex >= 0 && !document.querySelector("tr.selected")) { select(selectedIndex); }
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(document.activeElement)) { return; }
    var selected = document.querySelector("tr.selected");
    if (event.key === "/") {
      var search = document.querySelector("[data-search]") || document.querySelector("[data-jump]");
      if (search) { event.preventDefault(); search.focus(); search.select(); }
    } else if (event.key === "j") {
      select(selected ? selectedIndex + 1 : 0);
    } else if (event.key === "k") {
      select(selected ? selectedIndex - 1 : 0);
    } else if (event.key === "Enter" && selected) {
      var link = selected.querySelector("[data-open]");
      if (link) { event.preventDefault(); link.click(); }
    } else if (event.key === "r" && selected && document.body.getAttribute("data-operator") === "1") {
      var retry = selected.querySelector("[data-retry]");
      if (retry) { event.preventDefault(); retry.click(); }
    }
  });
})();
