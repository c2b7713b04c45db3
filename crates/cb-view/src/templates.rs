//! The pages' templates (minijinja, compiled in). Every template name ends in `.html`, so
//! every value is escaped unless it is marked safe, which only the markup this crate builds
//! from escaped text is (the side-by-side texts of `cb_audit::html`).

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
.cb-gold{font-weight:600;color:#055d20}.cb-negative{font-weight:600;color:#82071e}
fieldset{margin:.5em 0}.cb-done{color:#055d20}
";

/// The environment with every page's template and the style sheet.
pub fn load() -> Result<minijinja::Environment<'static>, ViewError> {
    let mut env = minijinja::Environment::new();
    for (name, text) in TEMPLATES {
        env.add_template(name, text)?;
    }
    let style = format!("{}{STYLE}", cb_audit::html::STYLE);
    env.add_global("style", minijinja::Value::from_safe_string(style));
    Ok(env)
}
