// Sorting and filtering of the tables on this page; no network, no other script.
(function () {
  function cellValue(row, index) {
    var cell = row.cells[index];
    var v = cell.getAttribute("data-v");
    if (v !== null && v !== "" && !isNaN(Number(v))) { return Number(v); }
    return (v !== null ? v : cell.textContent).toLowerCase();
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th").forEach(function (th, index) {
      th.addEventListener("click", function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var down = th.getAttribute("data-dir") !== "down";
        table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("data-dir"); });
        th.setAttribute("data-dir", down ? "down" : "up");
        rows.sort(function (a, b) {
          var x = cellValue(a, index), y = cellValue(b, index);
          return (x < y ? -1 : x > y ? 1 : 0) * (down ? -1 : 1);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  var form = document.getElementById("filters");
  if (!form) { return; }
  function apply() {
    var text = form.elements.text.value.toLowerCase();
    var role = form.elements.role.value;
    var failed = form.elements.failed.checked;
    var shown = 0;
    document.querySelectorAll("#runs tbody tr").forEach(function (row) {
      var ok = (!text || row.textContent.toLowerCase().indexOf(text) >= 0) &&
               (!role || row.getAttribute("data-role") === role) &&
               (!failed || row.getAttribute("data-failed") === "1");
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    document.getElementById("shown").textContent = String(shown);
  }
  form.addEventListener("input", apply);
  form.addEventListener("submit", function (e) { e.preventDefault(); });
})();
