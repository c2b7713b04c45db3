//! One check the reader check plans for a row ([`Planned`]): what it shows the reader, the
//! option it must pick, and what a failure does. Built by `plan` (the row's own checks) and
//! `judged` (the editor's questions), asked by the module above.

/// One check of an item, with what a failure does: the reject reason, or `None` to record.
pub(super) struct Planned {
    pub(super) name: String,
    pub(super) context: Option<String>,
    pub(super) expected: usize,
    pub(super) reject: Option<&'static str>,
    /// Asked even after an earlier check failed (the control: it measures the reader; the
    /// plausibility check: every row read gets its verdict).
    pub(super) always: bool,
    /// The control of a row noted `golden_unrelated`: a failure is marked `unrelated` and set
    /// aside from the reader's measure.
    pub(super) unrelated: bool,
    /// A judged check's own question and options (the judge prompt), instead of the row's.
    pub(super) ask: Option<(String, Vec<String>)>,
}

impl Planned {
    pub(super) fn new(
        name: impl Into<String>,
        context: &str,
        expected: usize,
        reject: Option<&'static str>,
    ) -> Self {
        Planned {
            name: name.into(),
            context: Some(context.to_owned()),
            expected,
            reject,
            always: false,
            unrelated: false,
            ask: None,
        }
    }

    /// The control: the golden context (the paragraph) must lead to the golden (original)
    /// answer; asked of every row.
    pub(super) fn control(context: &str, expected: usize, reject: Option<&'static str>) -> Self {
        Planned {
            always: true,
            ..Planned::new("control", context, expected, reject)
        }
    }
}
