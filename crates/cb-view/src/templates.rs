//! The pages' templates (minijinja, compiled in). Every template name ends in `.html`, so
//! every value is escaped unless it is marked safe, which only the markup this crate builds
//! from escaped text is (the side-by-side texts of `cb_audit::html`). Every value written,
//! safe or not, first has its direction controls and control characters turned into visible
//! marks ([`marks`]), so that a text can neither flip the rest of a line nor hide in it.

use crate::error::ViewError;

const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("../templates/base.html")),
    ("overview.html", include_str!("../templates/overview.html")),
    ("rows.html", include_str!("../templates/rows.html")),
    ("row.html", include_str!("../templates/row.html")),
    ("rejects.html", include_str!("../templates/rejects.html")),
    ("reject.html", include_str!("../templates/reject.html")),
    ("live.html", include_str!("../templates/live.html")),
    ("rate.html", include_str!("../templates/rate.html")),
    ("rate_cb.html", include_str!("../templates/rate_cb.html")),
    (
        "cb_evidence.html",
        include_str!("../templates/cb_evidence.html"),
    ),
    (
        "agreement.html",
        include_str!("../templates/agreement.html"),
    ),
];

const STYLE: &str = "
nav.cb-nav{display:flex;gap:1em;align-items:center;border-bottom:1px solid #ddd;padding-bottom:.5em}
nav.cb-nav form{margin-left:auto}
.cb-stale{background:#fff4ce;padding:.4em}
.cb-filters label{margin-right:.8em}
pre.cb-msg{white-space:pre-wrap;overflow-wrap:anywhere;background:#fafafa;border:1px solid #eee;padding:.4em;max-height:30em;overflow:auto}
details.cb-call{border:1px solid #ddd;border-radius:4px;margin:.4em 0;padding:.3em .6em}
.cb-gold,.cb-negative{font-weight:600}.cb-tag{font-size:.8em;font-weight:400;border:1px solid #999;border-radius:3px;padding:0 .3em}
fieldset{margin:.5em 0}.cb-done{color:#055d20}
section.cb-evidence{border-top:1px solid #ddd;margin-top:1em}
";

/// A character a text must not slip into a page as is: a control character (a line break
/// and a tab aside) or one that sets the direction of the text around it.
pub(crate) fn hidden(c: char) -> bool {
    (c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `s` with each [`hidden`] character written as a visible mark, `[U+202E]`.
pub fn marks(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(hidden) {
        return s.into();
    }
    s.chars()
        .map(|c| {
            if hidden(c) {
                format!("[U+{:04X}]", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// Writes a value as the default formatter does (escaped unless safe), its text marked.
fn marked(
    out: &mut minijinja::Output<'_>,
    state: &minijinja::State<'_, '_>,
    value: &minijinja::Value,
) -> Result<(), minijinja::Error> {
    match value.as_str().map(marks) {
        Some(std::borrow::Cow::Owned(m)) => {
            let v = if value.is_safe() {
                minijinja::Value::from_safe_string(m)
            } else {
                minijinja::Value::from(m)
            };
            minijinja::escape_formatter(out, state, &v)
        }
        _ => minijinja::escape_formatter(out, state, value),
    }
}

/// A page's address, `path?k=v&...`, the values encoded.
pub fn link<'a>(path: &str, pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    format!("{path}?{query}")
}

/// The environment with every page's template and the style sheet.
pub fn load() -> Result<minijinja::Environment<'static>, ViewError> {
    let mut env = minijinja::Environment::new();
    env.set_formatter(marked);
    for (name, text) in TEMPLATES {
        env.add_template(name, text)?;
    }
    let style = format!("{}{STYLE}", cb_audit::html::STYLE);
    env.add_global("style", minijinja::Value::from_safe_string(style));
    Ok(env)
}
