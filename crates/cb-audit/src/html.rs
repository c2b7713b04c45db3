//! The HTML report: one self-contained file (inline CSS and script, no external URL), a
//! table of the checks with a filter button each, and one card per row with its failing
//! checks and the original and the edited text side by side, each whole, with the words not in
//! the other text marked (`<del class="cb-del">` on the original's side, `<ins class="cb-ins">`
//! on the edited one's). Texts that share little ([`crate::diff::REWRITTEN_BELOW`]) are shown
//! unmarked and labelled "rewritten". Every text from the data is escaped.

use crate::diff::{side_by_side, REWRITTEN_BELOW};
use crate::{Item, Report};
use std::fmt::Write as _;

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The two texts side by side as HTML: two labelled columns, each text whole, changes marked
/// unless the texts were rewritten.
pub fn side_by_side_html(original: &str, edited: &str, labels: (&str, &str)) -> String {
    let c = side_by_side(original, edited);
    let rewritten = c.rewritten();
    let column = |pieces: &[(bool, String)], tag: &str, label: &str, side: &str| {
        let mut s = format!(
            "<div class=\"cb-side\"><div class=\"cb-label\">{}</div><div class=\"cb-text cb-{side}\">",
            escape(label)
        );
        for (marked, text) in pieces {
            let t = escape(text);
            if *marked && !rewritten {
                let _ = write!(s, "<{tag} class=\"cb-{tag}\">{t}</{tag}>");
            } else {
                s.push_str(&t);
            }
        }
        s.push_str("</div></div>");
        s
    };
    let note = match c.shared {
        Some(x) if rewritten => format!(
            "<div class=\"cb-meta cb-rewritten\">rewritten: {:.0}% of the words shared (below {:.0}%), shown without marks</div>",
            100.0 * x,
            100.0 * REWRITTEN_BELOW
        ),
        None => "<div class=\"cb-meta cb-rewritten\">rewritten or too long to align: shown without marks</div>".to_owned(),
        Some(x) => format!(
            "<div class=\"cb-meta\">{:.0}% of the words shared; <del class=\"cb-del\">only in the {}</del>, <ins class=\"cb-ins\">only in the {}</ins></div>",
            100.0 * x,
            escape(labels.0),
            escape(labels.1)
        ),
    };
    format!(
        "<div class=\"cb-diff\">{}{}</div>{note}",
        column(&c.original, "del", labels.0, "original"),
        column(&c.edited, "ins", labels.1, "edited"),
    )
}

/// The page's style sheet (also the viewer's, so that both mark edits alike).
pub const STYLE: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em;color:#1d1d1f;background:#fff;max-width:75em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em}
table{border-collapse:collapse;font-size:.9em}th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
td.n{text-align:right}.sev-error{color:#a40000;font-weight:600}.sev-warning{color:#8a5a00}.sev-info{color:#555}
.cb-filters{margin:1em 0;display:flex;flex-wrap:wrap;gap:.3em}
button.cb-filter{border:1px solid #888;background:#f4f4f4;border-radius:3px;padding:.2em .6em;cursor:pointer;font:inherit;font-size:.85em}
button.cb-filter.active{background:#1d4ed8;color:#fff;border-color:#1d4ed8}
.cb-row{border:1px solid #ddd;border-radius:4px;padding:.6em .8em;margin:.7em 0}
.cb-row[hidden]{display:none}
.cb-meta{font-size:.85em;color:#555}.cb-fails{margin:.3em 0;padding-left:1.2em;font-size:.9em}
.cb-diff{display:grid;grid-template-columns:1fr 1fr;gap:.6em;margin-top:.4em}
@media (max-width:40em){.cb-diff{grid-template-columns:1fr}}
.cb-label{font-size:.8em;color:#555;font-weight:600;margin-bottom:.2em}
.cb-text{white-space:pre-wrap;overflow-wrap:anywhere;line-height:1.5;background:#fafafa;border:1px solid #eee;padding:.5em}
.cb-rewritten{font-style:italic}
del.cb-del{background:#ffd7d5;color:#82071e;text-decoration:none}
ins.cb-ins{background:#ccffd8;color:#055d20;text-decoration:none}
code{font-size:.95em}
"#;

const SCRIPT: &str = r#"
(function () {
  var buttons = Array.prototype.slice.call(document.querySelectorAll('button.cb-filter'));
  var rows = Array.prototype.slice.call(document.querySelectorAll('.cb-row'));
  var shown = document.getElementById('cb-shown');
  function apply(code) {
    var n = 0;
    rows.forEach(function (r) {
      var codes = (r.getAttribute('data-checks') || '').split(' ');
      var show = code === '' || codes.indexOf(code) >= 0;
      r.hidden = !show;
      if (show) { n += 1; }
    });
    buttons.forEach(function (b) {
      b.classList.toggle('active', b.getAttribute('data-check') === code);
    });
    if (shown) { shown.textContent = String(n); }
  }
  buttons.forEach(function (b) {
    b.addEventListener('click', function () { apply(b.getAttribute('data-check')); });
  });
  apply('');
})();
"#;

/// The page for `report`, showing `items` (read with [`Report::items_at`]); `note`, a
/// sentence under the counts, says which failing rows were left out, where some were.
pub fn render(report: &Report, items: &[Item], title: &str, note: Option<&str>) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <link rel=\"icon\" href=\"data:,\"><title>{t}</title><style>{STYLE}</style></head><body>\n\
         <h1>{t}</h1>\n<p>{rows_n} rows in {files} file(s); {findings} finding(s). Rows shown below: {shown} \
         (filter: <span id=\"cb-shown\">{shown}</span> visible).</p>\n",
        t = escape(title),
        rows_n = report.rows,
        files = report.files.len(),
        findings = report.findings.len(),
        shown = items.len(),
    );
    if let Some(note) = note {
        let _ = writeln!(h, "<p class=\"cb-meta\">{}</p>", escape(note));
    }
    h.push_str("<h2>Files</h2>\n<table><tr><th>file</th><th>kind</th><th>rows</th></tr>\n");
    for f in &report.files {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{:?}</td><td class=\"n\">{}</td></tr>",
            escape(&f.path),
            f.kind,
            f.rows
        );
    }
    h.push_str("</table>\n<h2>Checks</h2>\n<table><tr><th>check</th><th>severity</th><th>meaning</th><th>threshold</th><th>failed</th><th>checked</th><th>rate</th><th>examples</th></tr>\n");
    for c in report.checks.iter().filter(|c| c.checked > 0) {
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td class=\"sev-{sev}\">{sev}</td><td>{}</td><td>{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1}%</td><td>{}</td></tr>",
            c.code,
            escape(c.meaning),
            escape(c.threshold.unwrap_or("")),
            c.failed,
            c.checked,
            100.0 * c.rate,
            escape(&c.examples.join(", ")),
            sev = c.severity.as_str(),
        );
    }
    h.push_str("</table>\n<h2>Rows</h2>\n<div class=\"cb-filters\">\
                <button type=\"button\" class=\"cb-filter\" data-check=\"\" id=\"cb-filter-all\">all rows</button>");
    for c in report.checks.iter().filter(|c| c.failed > 0) {
        let _ = write!(
            h,
            "<button type=\"button\" class=\"cb-filter\" data-check=\"{code}\" id=\"cb-filter-{code}\">{code} ({})</button>",
            c.failed,
            code = c.code
        );
    }
    h.push_str("</div>\n");
    for it in items {
        row_card(&mut h, it);
    }
    let _ = write!(h, "<script>{SCRIPT}</script>\n</body></html>\n");
    h
}

fn row_card(h: &mut String, it: &Item) {
    let codes: Vec<&str> = it.failed.iter().map(|(c, _)| c.as_str()).collect();
    let (orig_label, edit_label) = match it.kind {
        crate::ItemKind::Kre => ("golden context", "negative context"),
        crate::ItemKind::TextGeneration => ("source", "edited source"),
        crate::ItemKind::ConflictBank => ("correct evidence", "conflicting evidences"),
        _ => ("context", "edited context"),
    };
    let _ = write!(
        h,
        "<section class=\"cb-row\" data-checks=\"{}\" data-item=\"{}\">\
         <div class=\"cb-meta\"><b>{}</b> · {} · {} · {}</div>",
        escape(&codes.join(" ")),
        escape(&it.item_id),
        escape(&it.id),
        escape(&it.file),
        escape(&it.domain),
        it.kind.as_str(),
    );
    if !it.question.is_empty() {
        let _ = write!(h, "<p><b>Q:</b> {}</p>", escape(&it.question));
    }
    if !it.options.is_empty() {
        let opts: Vec<String> = it
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{}. {}", cb_model::letter(i), escape(o)))
            .collect();
        let _ = write!(h, "<p class=\"cb-meta\">options: {}</p>", opts.join(" | "));
    }
    let (a, b) = match it.kind {
        crate::ItemKind::Kre => ("answer", "negative answer"),
        crate::ItemKind::TextGeneration => ("O", "E"),
        crate::ItemKind::ConflictBank => ("true object", "replaced object"),
        _ => ("answer", "edited answer"),
    };
    let _ = write!(
        h,
        "<p class=\"cb-meta\">{a}: <b>{}</b> · {b}: <b>{}</b></p>",
        escape(&it.answer),
        escape(&it.other_answer)
    );
    if !it.reader.is_empty() {
        h.push_str("<ul class=\"cb-reader\">");
        for line in &it.reader {
            let _ = write!(h, "<li>reader: {}</li>", escape(line));
        }
        h.push_str("</ul>");
    }
    if it.failed.is_empty() {
        h.push_str("<p class=\"cb-meta\">passes every check</p>");
    } else {
        h.push_str("<ul class=\"cb-fails\">");
        for (code, detail) in &it.failed {
            let sev = crate::checks::info(code).map_or("info", |c| c.severity.as_str());
            let _ = write!(
                h,
                "<li><code class=\"sev-{sev}\">{}</code> {}</li>",
                escape(code),
                escape(detail)
            );
        }
        h.push_str("</ul>");
    }
    let _ = writeln!(
        h,
        "{}</section>",
        side_by_side_html(&it.original, &it.edited, (orig_label, edit_label))
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_is_marked_inside_each_whole_text_and_a_rewrite_is_not() {
        let h = side_by_side_html(
            "Joan was born in Domrémy in 1412.",
            "Joan was born in Lyon in 1412.",
            ("context", "edited context"),
        );
        assert!(h.contains(
            "<div class=\"cb-text cb-original\">Joan was born in <del class=\"cb-del\">Domrémy</del> in 1412.</div>"
        ), "{h}");
        assert!(h.contains(
            "<div class=\"cb-text cb-edited\">Joan was born in <ins class=\"cb-ins\">Lyon</ins> in 1412.</div>"
        ), "{h}");
        assert!(!h.contains("rewritten"));

        let h = side_by_side_html(
            "people waiting alongside with when you're in a reception area",
            "Reception areas often have chairs for people to sit and wait.",
            ("golden context", "negative context"),
        );
        assert!(h.contains("rewritten"), "{h}");
        assert!(!h.contains("<del") && !h.contains("<ins"), "{h}");
        assert!(
            h.contains(">people waiting alongside with when you&#39;re in a reception area</div>")
        );
        assert!(h.contains(">Reception areas often have chairs for people to sit and wait.</div>"));
    }
}
