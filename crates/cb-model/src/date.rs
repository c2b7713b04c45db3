//! Dates of key-value records: one human rendering per granularity, and a search that finds
//! a date in prose however the model wrote it (`30 May 1431`, `May 30, 1431`, `1431-05-30`).
//!
//! Renderings: day `30 May 1431`, month `May 1431`, year `1431`, decade `1430s`, century
//! `15th century`; years before the common era get ` BC` (`490 BC`, ISO year `-0490`).

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A parsed date: the year (negative before the common era) and, by granularity, month
/// and day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Date {
    pub year: i64,
    pub month: Option<u32>,
    pub day: Option<u32>,
    pub granularity: Granularity,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Granularity {
    Day,
    Month,
    Year,
    Decade,
    Century,
}

impl Granularity {
    /// `day`, `month`, `year`, `decade`, `century`, or the EventKG unit names
    /// (`unitDay`, ..., with or without a namespace); empty means day.
    pub fn parse(s: &str) -> Option<Self> {
        let local = s.rsplit(['#', '/']).next().unwrap_or(s);
        let local = local.strip_prefix("unit").unwrap_or(local);
        match local.to_ascii_lowercase().as_str() {
            "" | "day" => Some(Self::Day),
            "month" => Some(Self::Month),
            "year" => Some(Self::Year),
            "decade" => Some(Self::Decade),
            "century" => Some(Self::Century),
            _ => None,
        }
    }
}

/// Parses an ISO `xsd:date` (`1431-05-30`, `-0490-09-12`, also `1431-05` and `1431`).
pub fn parse_iso(iso: &str, granularity: Granularity) -> Option<Date> {
    let s = iso.trim();
    let (neg, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let mut parts = body.split('-');
    let y: i64 = parts.next()?.parse().ok()?;
    let m: Option<u32> = parts.next().map(str::parse).transpose().ok()?;
    let d: Option<u32> = parts
        .next()
        .map(|d| d.get(..2).unwrap_or(d).parse())
        .transpose()
        .ok()?;
    if m.is_some_and(|m| !(1..=12).contains(&m)) || d.is_some_and(|d| !(1..=31).contains(&d)) {
        return None;
    }
    // Ask for no more precision than the date has.
    let granularity = match (granularity, m, d) {
        (Granularity::Day, Some(_), None) => Granularity::Month,
        (Granularity::Day | Granularity::Month, None, _) => Granularity::Year,
        (g, _, _) => g,
    };
    Some(Date {
        year: if neg { -y } else { y },
        month: m,
        day: d,
        granularity,
    })
}

fn year_text(y: i64) -> String {
    if y <= 0 {
        // xsd:date year 0 is 1 BC, -1 is 2 BC; EventKG writes the BC year as its negative,
        // so take the magnitude as written (and year 0 as 1 BC).
        format!("{} BC", y.unsigned_abs().max(1))
    } else {
        y.to_string()
    }
}

fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

impl Date {
    /// The one rendering written into records.
    pub fn render(&self) -> String {
        let month = self.month.map(|m| MONTHS[m as usize - 1]);
        match (self.granularity, month, self.day) {
            (Granularity::Day, Some(m), Some(d)) => format!("{d} {m} {}", year_text(self.year)),
            (Granularity::Day | Granularity::Month, Some(m), _) => {
                format!("{m} {}", year_text(self.year))
            }
            (Granularity::Decade, _, _) if self.year > 0 => format!("{}s", self.year / 10 * 10),
            (Granularity::Century, _, _) => {
                let c = (self.year.unsigned_abs().max(1) - 1) / 100 + 1;
                let bc = if self.year <= 0 { " BC" } else { "" };
                format!("{} century{bc}", ordinal(c))
            }
            _ => year_text(self.year),
        }
    }

    /// Every way prose commonly writes this date, the rendering first.
    pub fn variants(&self) -> Vec<String> {
        let y = year_text(self.year);
        let mut v = vec![self.render()];
        if self.year <= 0 {
            // "490 BC" is also written "490 BCE" and "490 B.C.".
            let more: Vec<String> = v
                .iter()
                .flat_map(|r| [r.replace(" BC", " BCE"), r.replace(" BC", " B.C.")])
                .collect();
            v.extend(more);
        }
        match (self.granularity, self.month, self.day) {
            (Granularity::Day, Some(m), Some(d)) => {
                let name = MONTHS[m as usize - 1];
                let short = &name[..3];
                let th = ordinal(u64::from(d));
                v.extend([
                    format!("{name} {d}, {y}"),
                    format!("{name} {d} {y}"),
                    format!("{d} {name}, {y}"),
                    format!("{th} {name} {y}"),
                    format!("{th} of {name} {y}"),
                    format!("{th} of {name}, {y}"),
                    format!("{name} {th}, {y}"),
                    format!("{name} {th} {y}"),
                    format!("{th} {name}, {y}"),
                    format!("{d} {short} {y}"),
                    format!("{short} {d}, {y}"),
                ]);
                if self.year > 0 {
                    v.push(format!("{:04}-{m:02}-{d:02}", self.year));
                }
            }
            (Granularity::Day | Granularity::Month, Some(m), _) => {
                let name = MONTHS[m as usize - 1];
                v.extend([format!("{name}, {y}"), format!("{name} of {y}")]);
            }
            (Granularity::Century, _, _) => {
                let r = self.render();
                v.push(r.replacen(" century", "-century", 1));
            }
            _ => {}
        }
        v
    }
}

/// Parses a date as [`Date::render`] writes it (or an ISO date): the inverse of the
/// rendering, used to recognise a record value as a date.
pub fn parse_rendered(s: &str) -> Option<Date> {
    let s = s.trim();
    if let Some(d) = parse_iso(s, Granularity::Day) {
        if s.contains('-') || (s.chars().all(|c| c.is_ascii_digit()) && (3..=4).contains(&s.len()))
        {
            return Some(d);
        }
    }
    let (body, bc) = match s.strip_suffix(" BC") {
        Some(b) => (b, true),
        None => (s, false),
    };
    let sign = |y: i64| if bc { -y } else { y };
    let words: Vec<&str> = body.split_whitespace().collect();
    let month_of = |w: &str| MONTHS.iter().position(|m| *m == w).map(|i| i as u32 + 1);
    match words.as_slice() {
        [d, m, y] => Some(Date {
            year: sign(y.parse().ok()?),
            month: Some(month_of(m)?),
            day: Some(d.parse().ok().filter(|d| (1..=31).contains(d))?),
            granularity: Granularity::Day,
        }),
        [m, y] if month_of(m).is_some() => Some(Date {
            year: sign(y.parse().ok()?),
            month: month_of(m),
            day: None,
            granularity: Granularity::Month,
        }),
        [c, "century"] => {
            let n: i64 = c.get(..c.len().checked_sub(2)?)?.parse().ok()?;
            if n < 1 || ordinal(n as u64) != *c {
                return None;
            }
            Some(Date {
                year: sign((n - 1) * 100 + 1),
                month: None,
                day: None,
                granularity: Granularity::Century,
            })
        }
        [y] => {
            if let Some(dec) = y.strip_suffix('s') {
                if bc || !dec.ends_with('0') {
                    return None;
                }
                return Some(Date {
                    year: dec.parse().ok()?,
                    month: None,
                    day: None,
                    granularity: Granularity::Decade,
                });
            }
            // A bare number is a year only with three or four digits ("1066"), or with BC.
            if !bc && !(3..=4).contains(&y.len()) {
                return None;
            }
            Some(Date {
                year: sign(y.parse().ok()?),
                month: None,
                day: None,
                granularity: Granularity::Year,
            })
        }
        _ => None,
    }
}

/// Parses a date as prose writes it: what [`parse_rendered`] reads, and also `May 30, 1431`,
/// `the 30th of May 1431`, `Jun 12, 1520` (full or three-letter month names), `490 BCE`,
/// `490 B.C.`. Any word other than a month, a day, a year, an era marker and `the`, `of`,
/// `on`, `in` makes it no date.
pub fn parse_loose(s: &str) -> Option<Date> {
    if let Some(d) = parse_rendered(s) {
        return Some(d);
    }
    let cleaned = s
        .replace("B.C.", "BC")
        .replace("BCE", "BC")
        .replace([',', '.'], " ");
    let (mut year, mut month, mut day, mut bc) = (None, None, None, false);
    for w in cleaned.split_whitespace() {
        let lw = w.to_lowercase();
        if matches!(lw.as_str(), "the" | "of" | "on" | "in") {
            continue;
        }
        if lw == "bc" {
            bc = true;
            continue;
        }
        if let Some(m) = MONTHS.iter().position(|m| {
            m.to_lowercase() == lw || (lw.len() == 3 && m.to_lowercase().starts_with(&lw))
        }) {
            month = month.or(Some(m as u32 + 1));
            continue;
        }
        let digits = ["st", "nd", "rd", "th"]
            .iter()
            .find_map(|suf| lw.strip_suffix(suf))
            .unwrap_or(&lw);
        let n: i64 = digits.parse().ok()?;
        let plain = digits.len() == lw.len();
        if plain && year.is_none() && (digits.len() >= 3 || n > 31) && digits.len() <= 4 {
            year = Some(n);
        } else if (1..=31).contains(&n) && digits.len() <= 2 && day.is_none() {
            day = Some(n as u32);
        } else {
            return None;
        }
    }
    // A short number with BC is a year ("44 BC").
    if year.is_none() && bc && month.is_none() {
        year = day.take().map(i64::from);
    }
    let y = year?;
    if !bc && y < 100 {
        return None;
    }
    let granularity = match (month, day) {
        (Some(_), Some(_)) => Granularity::Day,
        (Some(_), None) => Granularity::Month,
        (None, None) => Granularity::Year,
        (None, Some(_)) => return None,
    };
    Some(Date {
        year: if bc { -y } else { y },
        month,
        day,
        granularity,
    })
}

/// Every mention of `date` in `text`, left to right, not overlapping (longest first where
/// two variants start at the same place).
pub fn find_all(text: &str, date: &Date) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = date
        .variants()
        .iter()
        .flat_map(|v| crate::text::find_word_occurrences(text, v))
        .collect();
    spans.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
    let mut out: Vec<(usize, usize)> = Vec::new();
    for sp in spans {
        if out.last().is_none_or(|l| sp.0 >= l.1) {
            out.push(sp);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(iso: &str, g: &str) -> Date {
        parse_iso(iso, Granularity::parse(g).unwrap()).unwrap()
    }

    #[test]
    fn renderings_follow_the_granularity() {
        assert_eq!(d("1431-05-30", "day").render(), "30 May 1431");
        assert_eq!(
            d("1431-05-30", "http://www.w3.org/2006/time#unitMonth").render(),
            "May 1431"
        );
        assert_eq!(d("1431-01-01", "unitYear").render(), "1431");
        assert_eq!(d("1431-01-01", "unitDecade").render(), "1430s");
        assert_eq!(d("1431-01-01", "unitCentury").render(), "15th century");
        assert_eq!(d("1901-01-01", "century").render(), "20th century");
        assert_eq!(d("-0490-09-12", "year").render(), "490 BC");
        assert_eq!(d("-0490-09-12", "day").render(), "12 September 490 BC");
        assert_eq!(d("1912-04", "day").render(), "April 1912");
        assert!(parse_iso("1431-13-01", Granularity::Day).is_none());
    }

    #[test]
    fn renderings_parse_back() {
        for (iso, g) in [
            ("1431-05-30", "day"),
            ("1431-05-30", "month"),
            ("1431-05-30", "year"),
            ("1431-05-30", "decade"),
            ("1431-05-30", "century"),
            ("-0490-09-12", "year"),
        ] {
            let date = d(iso, g);
            let back = parse_rendered(&date.render()).unwrap();
            assert_eq!(back.render(), date.render(), "{iso} {g}");
        }
        assert!(parse_rendered("Rouen").is_none());
        assert!(
            parse_rendered("12").is_none(),
            "a bare small number is no year"
        );
        assert!(parse_rendered("1234 century").is_none());
        assert!(parse_rendered("11st century").is_none());
        assert!(parse_rendered("1430s BC").is_none());
        assert_eq!(parse_rendered("44 BC").unwrap().year, -44);
        assert!(parse_rendered("Pierre Cauchon").is_none());
    }

    #[test]
    fn prose_dates_parse_loosely() {
        for (text, rendered) in [
            ("May 30, 1431", "30 May 1431"),
            ("the 30th of May 1431", "30 May 1431"),
            ("30 May 1431", "30 May 1431"),
            ("Jun 12, 1520", "12 June 1520"),
            ("June 1520", "June 1520"),
            ("490 BCE", "490 BC"),
            ("44 B.C.", "44 BC"),
            ("1066", "1066"),
        ] {
            let d = parse_loose(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(d.render(), rendered, "{text}");
        }
        for not in ["Boeing 747", "Rouen", "12", "Apollo 11", "30 May"] {
            assert!(parse_loose(not).is_none(), "{not}");
        }
    }

    #[test]
    fn dates_are_found_however_they_are_written() {
        let date = d("1431-05-30", "day");
        for text in [
            "She was burned on May 30, 1431 in Rouen.",
            "She was burned on 30 May 1431 in Rouen.",
            "She was burned on the 30th of May 1431 in Rouen.",
            "She was burned on 1431-05-30 in Rouen.",
        ] {
            let (s, e) = *find_all(text, &date)
                .first()
                .unwrap_or_else(|| panic!("{text}"));
            assert!(text[s..e].contains("1431"), "{text}");
        }
        assert!(find_all("She was burned in 1431.", &date).is_empty());
        assert!(!find_all("Burned on May 30th 1431.", &date).is_empty());
        let marathon = parse_rendered("490 BC").unwrap();
        assert!(!find_all("The battle of 490 BCE.", &marathon).is_empty());
        let text = "From 30 May 1431 to May 30, 1431.";
        assert_eq!(find_all(text, &date).len(), 2);
    }
}
