//! Inline SVG charts for `results.html` and `compare.html`: horizontal bars with their 95 %
//! interval whiskers ([`bars`]), and KRE's decision-making style axis from dependent to
//! intuitive with one point per model ([`style_axis`]).
//!
//! Each chart is one `<svg>` element with its colours as attributes: no script, no style
//! sheet, nothing loaded from elsewhere; every text goes through [`escape`]. Values are in
//! the units the tables print (percentages ×100, BLEU as it is). The elements carry classes a
//! reader (or the browser test) can count: `cb-bar` (one `rect` per value), `cb-whisker`
//! (one `g` of three `line`s per interval), `cb-zero` (the zero line), `cb-point` (one
//! `circle` per model on the style axis), `cb-label`, `cb-value`, `cb-tick`, `cb-title`.

use cb_audit::html::escape;
use cb_metrics::kre::{style, STYLE_BAND};
use cb_metrics::Interval;
use std::fmt::Write;

/// Width of every chart, in pixels.
const WIDTH: f64 = 980.0;
/// Right edge of the label column.
const LABEL_END: f64 = 200.0;
/// Where the plot area starts and ends.
const PLOT: (f64, f64) = (210.0, 700.0);
/// Where the value text starts.
const VALUE_X: f64 = 710.0;
/// Height of one row.
const ROW: f64 = 22.0;
/// Space above the first row (title and tick labels).
const TOP: f64 = 44.0;

const BAR: &str = "#4a7fb5";
const BAR_FAINT: &str = "#a9c1da";
const INK: &str = "#222";
const GRID: &str = "#ddd";

/// One row of a bar chart.
#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    /// `None`: the row shows its text only (a figure without a value).
    pub value: Option<f64>,
    pub interval: Option<Interval>,
    /// The text right of the plot (the table's cell).
    pub text: String,
    /// Drawn in the full colour; the others faint (used for differences whose interval
    /// holds 0).
    pub strong: bool,
}

/// Rounds `x > 0` up to 1, 2 or 5 times a power of ten.
fn nice_ceil(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|v| *v >= x - 1e-9)
        .unwrap_or(10.0 * p)
}

/// The axis for `bars` given the range their metrics naturally span (`natural`): that range,
/// widened to every value and interval end, with nicely rounded ends beyond it.
pub fn range_for(bars: &[Bar], natural: (f64, f64)) -> (f64, f64) {
    let mut lo = natural.0.min(0.0);
    let mut hi = natural.1.max(0.0);
    for b in bars {
        for v in b
            .value
            .into_iter()
            .chain(b.interval.iter().flat_map(|i| [i.low, i.high]))
        {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    let lo = if lo < natural.0.min(0.0) {
        -nice_ceil(-lo)
    } else {
        lo
    };
    let hi = if hi > natural.1.max(0.0) {
        nice_ceil(hi)
    } else {
        hi
    };
    if hi - lo <= 0.0 {
        (lo - 1.0, hi + 1.0)
    } else {
        (lo, hi)
    }
}

/// A symmetric axis around 0 holding every value and interval end (for differences).
pub fn symmetric_range(bars: &[Bar]) -> (f64, f64) {
    let m = bars
        .iter()
        .flat_map(|b| {
            b.value
                .into_iter()
                .chain(b.interval.iter().flat_map(|i| [i.low, i.high]))
        })
        .map(f64::abs)
        .fold(0.0, f64::max);
    let m = nice_ceil(m);
    (-m, m)
}

/// Pixel position of `v` on an axis from `range.0` to `range.1` drawn between `px.0` and
/// `px.1`, clamped to it.
fn scale(v: f64, range: (f64, f64), px: (f64, f64)) -> f64 {
    let t = ((v - range.0) / (range.1 - range.0)).clamp(0.0, 1.0);
    px.0 + t * (px.1 - px.0)
}

/// A number as a tick label: no decimals when whole.
fn tick_text(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.1}")
    }
}

fn text(out: &mut String, class: &str, x: f64, y: f64, anchor: &str, extra: &str, content: &str) {
    let _ = write!(
        out,
        "<text class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\" fill=\"{INK}\"{extra}>{}</text>",
        escape(content)
    );
}

/// An interval whisker at height `y`: the span and a cap at each end.
fn whisker(out: &mut String, x0: f64, x1: f64, y: f64, colour: &str) {
    let _ = write!(
        out,
        "<g class=\"cb-whisker\" stroke=\"{colour}\" stroke-width=\"1.5\"><line x1=\"{x0:.1}\" y1=\"{y:.1}\" x2=\"{x1:.1}\" y2=\"{y:.1}\"/><line x1=\"{x0:.1}\" y1=\"{:.1}\" x2=\"{x0:.1}\" y2=\"{:.1}\"/><line x1=\"{x1:.1}\" y1=\"{:.1}\" x2=\"{x1:.1}\" y2=\"{:.1}\"/></g>",
        y - 5.0,
        y + 5.0,
        y - 5.0,
        y + 5.0
    );
}

fn open(out: &mut String, height: f64, title: &str) {
    let _ = write!(
        out,
        "<svg class=\"cb-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height:.0}\" viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\"><title>{t}</title>",
        t = escape(title)
    );
    text(
        out,
        "cb-title",
        0.0,
        16.0,
        "start",
        " font-weight=\"bold\"",
        title,
    );
}

/// Tick labels above the plot and light grid lines from `top` down to `bottom`, at five even
/// steps and at `extra`.
fn ticks(
    out: &mut String,
    range: (f64, f64),
    px: (f64, f64),
    (top, bottom): (f64, f64),
    extra: &[f64],
) {
    let mut at: Vec<f64> = (0..=4)
        .map(|i| range.0 + (range.1 - range.0) * f64::from(i) / 4.0)
        .collect();
    at.extend(
        extra
            .iter()
            .copied()
            .filter(|v| *v > range.0 && *v < range.1),
    );
    at.sort_by(f64::total_cmp);
    at.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
    for v in at {
        let x = scale(v, range, px);
        let _ = write!(
            out,
            "<line class=\"cb-grid\" x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" stroke=\"{GRID}\"/>"
        );
        text(out, "cb-tick", x, TOP - 12.0, "middle", "", &tick_text(v));
    }
}

/// A bar chart: one row per bar, the bar from 0 to its value, its interval as a whisker, the
/// zero line, tick labels, the label left and the text right of each row.
pub fn bars(title: &str, rows: &[Bar], range: (f64, f64)) -> String {
    let height = TOP + ROW * rows.len() as f64 + 8.0;
    let mut s = String::new();
    open(&mut s, height, title);
    let bottom = TOP + ROW * rows.len() as f64;
    ticks(&mut s, range, PLOT, (TOP - 8.0, bottom), &[]);
    let zero = scale(0.0, range, PLOT);
    for (i, b) in rows.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let mid = y + ROW / 2.0;
        text(
            &mut s,
            "cb-label",
            LABEL_END,
            mid + 4.0,
            "end",
            "",
            &b.label,
        );
        let colour = if b.strong { BAR } else { BAR_FAINT };
        if let Some(v) = b.value {
            let x = scale(v, range, PLOT);
            let (x0, x1) = if x < zero { (x, zero) } else { (zero, x) };
            let _ = write!(
                s,
                "<rect class=\"cb-bar\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"12\" fill=\"{colour}\"><title>{}</title></rect>",
                mid - 6.0,
                (x1 - x0).max(1.0),
                escape(&format!("{}: {}", b.label, b.text))
            );
        }
        if let Some(iv) = b.interval {
            whisker(
                &mut s,
                scale(iv.low, range, PLOT),
                scale(iv.high, range, PLOT),
                mid,
                INK,
            );
        }
        text(&mut s, "cb-value", VALUE_X, mid + 4.0, "start", "", &b.text);
    }
    let _ = write!(
        s,
        "<line class=\"cb-zero\" x1=\"{zero:.1}\" y1=\"{:.1}\" x2=\"{zero:.1}\" y2=\"{bottom:.1}\" stroke=\"{INK}\" stroke-width=\"1\"/>",
        TOP - 4.0
    );
    s.push_str("</svg>");
    s
}

/// One model on the style axis.
#[derive(Debug, Clone)]
pub struct Point {
    pub label: String,
    /// DMSS in [-1, 1].
    pub dmss: f64,
    pub interval: Option<Interval>,
}

/// KRE's decision-making style axis (section 3.4): DMSS from -100 (dependent: the model
/// takes the context's answer) to +100 (intuitive: it keeps its memory's answer), the band
/// of ±[`STYLE_BAND`] around 0 read as rational/irrational shaded, one lane per model with
/// its point, its interval as a whisker, and its value and style as text.
pub fn style_axis(title: &str, points: &[Point]) -> String {
    let range = (-100.0, 100.0);
    let band = STYLE_BAND * 100.0;
    // The regions' names on a row of their own above the lanes.
    let lanes = TOP + 16.0;
    let bottom = lanes + ROW * points.len() as f64;
    let mut s = String::new();
    open(&mut s, bottom + 8.0, title);
    for (from, to, fill, name) in [
        (-100.0, -band, "#fbe3cf", "dependent"),
        (-band, band, "#eeeeee", "rational/irrational"),
        (band, 100.0, "#dcefd6", "intuitive"),
    ] {
        let (x0, x1) = (scale(from, range, PLOT), scale(to, range, PLOT));
        let _ = write!(
            s,
            "<rect class=\"cb-region\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\"/>",
            TOP - 8.0,
            x1 - x0,
            bottom - TOP + 8.0
        );
        text(
            &mut s,
            "cb-region-label",
            (x0 + x1) / 2.0,
            TOP + 6.0,
            "middle",
            " font-style=\"italic\" font-size=\"10\"",
            name,
        );
    }
    ticks(&mut s, range, PLOT, (lanes - 2.0, bottom), &[-band, band]);
    let zero = scale(0.0, range, PLOT);
    let _ = write!(
        s,
        "<line class=\"cb-zero\" x1=\"{zero:.1}\" y1=\"{:.1}\" x2=\"{zero:.1}\" y2=\"{bottom:.1}\" stroke=\"{INK}\" stroke-width=\"1\"/>",
        lanes - 2.0
    );
    for (i, p) in points.iter().enumerate() {
        let mid = lanes + ROW * i as f64 + ROW / 2.0;
        text(
            &mut s,
            "cb-label",
            LABEL_END,
            mid + 4.0,
            "end",
            "",
            &p.label,
        );
        let v = p.dmss * 100.0;
        if let Some(iv) = p.interval {
            whisker(
                &mut s,
                scale(iv.low * 100.0, range, PLOT),
                scale(iv.high * 100.0, range, PLOT),
                mid,
                INK,
            );
        }
        let _ = write!(
            s,
            "<circle class=\"cb-point\" cx=\"{:.1}\" cy=\"{mid:.1}\" r=\"5\" fill=\"{BAR}\" stroke=\"{INK}\"><title>{}</title></circle>",
            scale(v, range, PLOT),
            escape(&p.label)
        );
        let mut value = format!("DMSS {v:.2}");
        if let Some(iv) = p.interval {
            let _ = write!(value, " [{:.2}, {:.2}]", iv.low * 100.0, iv.high * 100.0);
        }
        let _ = write!(value, " {}", style(p.dmss).as_str());
        text(&mut s, "cb-value", VALUE_X, mid + 4.0, "start", "", &value);
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(label: &str, value: Option<f64>, iv: Option<(f64, f64)>) -> Bar {
        Bar {
            label: label.into(),
            value,
            interval: iv.map(|(low, high)| Interval { low, high }),
            text: format!("{label} text"),
            strong: true,
        }
    }

    #[test]
    fn bars_draw_one_mark_per_value_and_interval_and_escape_text() {
        let rows = [
            bar("acc", Some(75.0), Some((50.0, 100.0))),
            bar("<script>", Some(-20.0), None),
            bar("m_rate", None, None),
        ];
        let svg = bars("T & <b>", &rows, range_for(&rows, (0.0, 100.0)));
        assert_eq!(svg.matches("class=\"cb-bar\"").count(), 2);
        assert_eq!(svg.matches("class=\"cb-whisker\"").count(), 1);
        assert_eq!(svg.matches("class=\"cb-zero\"").count(), 1);
        assert!(svg.contains("T &amp; &lt;b&gt;") && svg.contains("&lt;script&gt;"));
        assert!(!svg.contains("<script>") && !svg.contains("<b>"));
        assert!(!svg.contains("href") && !svg.contains("src="));
        // -20 widens the 0..100 axis to a rounded -20.
        assert_eq!(range_for(&rows, (0.0, 100.0)), (-20.0, 100.0));
    }

    #[test]
    fn ranges_round_out_and_stay_put_inside_the_natural_range() {
        let r = [bar("x", Some(130.0), Some((110.0, 180.0)))];
        assert_eq!(range_for(&r, (0.0, 100.0)), (0.0, 200.0));
        assert_eq!(range_for(&r[..0], (-100.0, 100.0)), (-100.0, 100.0));
        assert_eq!(
            symmetric_range(&[bar("d", Some(-12.0), Some((-30.0, 4.0)))]),
            (-50.0, 50.0)
        );
        assert_eq!(
            symmetric_range(&[bar("d", Some(0.0), Some((0.0, 0.0)))]),
            (-1.0, 1.0)
        );
        assert_eq!(nice_ceil(100.0), 100.0);
        assert_eq!(nice_ceil(101.0), 200.0);
    }

    #[test]
    fn style_axis_places_each_model_on_its_side() {
        let svg = style_axis(
            "style",
            &[
                Point {
                    label: "follower".into(),
                    dmss: -1.0,
                    interval: Some(Interval {
                        low: -1.0,
                        high: -0.8,
                    }),
                },
                Point {
                    label: "memory".into(),
                    dmss: 1.0,
                    interval: None,
                },
            ],
        );
        assert_eq!(svg.matches("class=\"cb-point\"").count(), 2);
        assert_eq!(svg.matches("class=\"cb-whisker\"").count(), 1);
        for t in ["dependent", "intuitive", "rational/irrational"] {
            assert!(svg.contains(&format!(">{t}</text>")), "{t}");
        }
        assert!(svg.contains(&format!("cx=\"{:.1}\"", PLOT.0)));
        assert!(svg.contains(&format!("cx=\"{:.1}\"", PLOT.1)));
        assert!(svg.contains("DMSS -100.00 [-100.00, -80.00] dependent"));
        assert!(svg.contains("DMSS 100.00 intuitive"));
    }
}
