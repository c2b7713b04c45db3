//! What a text says beyond the inputs it copies ([`beyond_copies`]), in time linear in the
//! text and the copies: one scan of the lower-cased text for every copy at once (the
//! `aho-corasick` crate's automaton, the one ripgrep uses), then only the surroundings of
//! each cut scanned again.

/// `text` with every case-insensitive occurrence of each of `copied` (trimmed, a final
/// period dropped) cut out: what the text says beyond the inputs it repeats. A refusal or a
/// golden answer is looked for in this rest, so that a premise such as "I cannot take new
/// photos now." copied into an explanation is not read as a refusal.
///
/// Rule: the copies of at least 8 characters are taken longest first (in bytes; equal
/// lengths in the order given); each cuts, from the text as the longer ones left it, its
/// leftmost occurrences that do not overlap, compared lower-cased ([`str::to_lowercase`]),
/// and each occurrence cut leaves one space. A text whose lower-casing changes its length in
/// bytes is returned as it is.
///
/// Cost: linear in the text and the copies: one lower-casing of the text and one scan for
/// all copies at once (the `aho-corasick` crate's automaton), then only the surroundings of
/// each cut are scanned again, for what the cut joined. Cutting one copy at a time, as the rule reads,
/// lower-cased and searched the whole text once per copy: a passage of 40,000 sentences did
/// not build within minutes (issue 22). Only a text with characters whose lower case is
/// longer in bytes and others whose lower case is shorter, in equal measure ("İ" and the
/// Kelvin sign), is still cut one copy at a time, where lower-cased offsets are not the
/// text's own.
pub fn beyond_copies(text: &str, copied: &[&str]) -> String {
    let needles = needles(copied);
    if needles.is_empty() {
        return text.to_owned();
    }
    let same_offsets = text.is_ascii()
        || text
            .chars()
            .all(|c| c.to_lowercase().map(char::len_utf8).sum::<usize>() == c.len_utf8());
    if !same_offsets && text.to_lowercase().len() != text.len() {
        // No copy is ever cut.
        return text.to_owned();
    }
    if !same_offsets || text.len() >= NONE as usize {
        return cut_each_in_turn(text, &needles);
    }
    Cutter::new(text).cut_all(&needles)
}

/// The copies that are cut: trimmed, a final period dropped, at least 8 characters, longest
/// first (in bytes; equal lengths in the order given).
pub(crate) fn needles(copied: &[&str]) -> Vec<String> {
    let mut needles: Vec<String> = copied
        .iter()
        .map(|c| c.trim().trim_end_matches('.').trim().to_owned())
        .filter(|c| c.chars().count() >= 8)
        .collect();
    needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
    needles
}

/// The rule of [`beyond_copies`] applied as it reads, one copy after the other, each
/// lower-casing and searching the whole text: kept for the texts whose lower-cased offsets
/// are not their own.
pub(crate) fn cut_each_in_turn(text: &str, needles: &[String]) -> String {
    let mut out = text.to_owned();
    for n in needles {
        let lower = out.to_lowercase();
        let nl = n.to_lowercase();
        // Lower-casing may change byte lengths; cut only where the two line up.
        if lower.len() != out.len() {
            continue;
        }
        let mut rest = String::with_capacity(out.len());
        let mut last = 0;
        let mut from = 0;
        while let Some(i) = lower[from..].find(&nl).map(|i| i + from) {
            rest.push_str(&out[last..i]);
            rest.push(' ');
            last = i + nl.len();
            from = last;
        }
        rest.push_str(&out[last..]);
        out = rest;
    }
    out
}

/// The bound on a text cut at its offsets (kept as `u32`); a longer text is cut one copy at a
/// time.
const NONE: u32 = u32::MAX;

/// Every occurrence of every copy in a text. For a few copies (a row's premise and question),
/// each is searched on its own with `memchr`'s substring search, which costs next to nothing
/// to set up; for more, the `aho-corasick` crate's automaton over the distinct lower-cased
/// copies, with its standard match semantics, the only ones that report overlapping
/// occurrences, finds them all in one pass. Both report the same occurrences (callers sort
/// them); only the order of the reports differs.
enum CopyFinder {
    Each(Vec<memchr::memmem::Finder<'static>>),
    Automaton(aho_corasick::AhoCorasick),
}

/// The most copies searched one by one; past it, one automaton scans for all of them.
const SEARCHED_EACH: usize = 8;

impl CopyFinder {
    /// The finder of `patterns` (distinct and not empty), or `None` where the automaton
    /// crate refuses to build it (more states than its identifiers hold).
    fn new(patterns: &[&[u8]]) -> Option<Self> {
        if patterns.len() <= SEARCHED_EACH {
            let each = patterns
                .iter()
                .map(|p| memchr::memmem::Finder::new(p).into_owned())
                .collect();
            return Some(CopyFinder::Each(each));
        }
        aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::Standard)
            .build(patterns)
            .ok()
            .map(CopyFinder::Automaton)
    }

    /// Calls `found(pattern, start, end)` for every occurrence in `hay`, overlapping ones
    /// too.
    fn scan(&self, hay: &[u8], mut found: impl FnMut(usize, usize, usize)) {
        match self {
            CopyFinder::Each(each) => {
                for (p, finder) in each.iter().enumerate() {
                    let len = finder.needle().len();
                    let mut from = 0;
                    while let Some(i) = finder.find(&hay[from..]) {
                        found(p, from + i, from + i + len);
                        from += i + 1;
                    }
                }
            }
            CopyFinder::Automaton(automaton) => {
                for m in automaton.find_overlapping_iter(hay) {
                    found(m.pattern().as_usize(), m.start(), m.end());
                }
            }
        }
    }
}

/// The turns of [`Cutter::cut_all`]: one a copy, longest first, each naming its pattern
/// (copies equal once lower-cased share one).
struct Turns {
    /// Each turn's copy, lower-cased.
    lowered: Vec<String>,
    /// Each pattern's first turn (the patterns are the distinct lower-cased copies, in the
    /// order of their first turn).
    first_turn: Vec<usize>,
    /// Each turn's pattern.
    pattern_of: Vec<usize>,
    /// Each pattern's last turn.
    last_turn: Vec<usize>,
    /// The longest copy from each turn on (one more entry, 0): how far a change can reach.
    reach: Vec<usize>,
}

impl Turns {
    fn of(needles: &[String]) -> Self {
        let lowered: Vec<String> = needles.iter().map(|n| n.to_lowercase()).collect();
        let mut first_turn: Vec<usize> = Vec::new();
        let pattern_of: Vec<usize> = {
            let mut ids: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
            (lowered.iter().enumerate())
                .map(|(turn, l)| {
                    *ids.entry(l.as_str()).or_insert_with(|| {
                        first_turn.push(turn);
                        first_turn.len() - 1
                    })
                })
                .collect()
        };
        let mut last_turn = vec![0usize; first_turn.len()];
        for (turn, &p) in pattern_of.iter().enumerate() {
            last_turn[p] = turn;
        }
        let mut reach = vec![0usize; needles.len() + 1];
        for turn in (0..needles.len()).rev() {
            reach[turn] = reach[turn + 1].max(lowered[turn].len());
        }
        Turns {
            lowered,
            first_turn,
            pattern_of,
            last_turn,
            reach,
        }
    }

    /// Pattern `p`'s bytes.
    fn pattern(&self, p: usize) -> &[u8] {
        self.lowered[self.first_turn[p]].as_bytes()
    }
}

/// How the standard library's final-sigma rule sees a character (Unicode's Case_Ignorable
/// and Cased, which it does not export).
#[derive(PartialEq)]
enum SigmaContext {
    Ignorable,
    Cased,
    Other,
}

impl SigmaContext {
    /// Read off how `to_lowercase` writes "Σ" after "A" and before `c`, then before `c`
    /// and "A".
    fn of(c: char) -> Self {
        let last = |after: &str| format!("AΣ{after}").to_lowercase()[1..3] == *"ς";
        if !last(&c.to_string()) {
            SigmaContext::Cased
        } else if !last(&format!("{c}A")) {
            SigmaContext::Ignorable
        } else {
            SigmaContext::Other
        }
    }
}

/// The text of [`beyond_copies`] as the copies cut so far left it, kept at the original
/// offsets: each cut is a range of the original text that reads as one space. For texts whose
/// characters keep their length in bytes when lower-cased.
struct Cutter<'t> {
    text: &'t str,
    /// The lower case of the current text at each original offset (stale inside cuts). Only
    /// a "Σ" changes with its surroundings, between "σ" and "ς" (both two bytes).
    low: Vec<u8>,
    /// Whether a byte lies in a cut.
    cut: Vec<bool>,
    /// Each cut's end, by its start.
    end_of: rustc_hash::FxHashMap<u32, u32>,
    /// Each cut's start, by its end (one past it).
    start_of: rustc_hash::FxHashMap<u32, u32>,
}

impl<'t> Cutter<'t> {
    fn new(text: &'t str) -> Self {
        let low = text.to_lowercase().into_bytes();
        debug_assert_eq!(low.len(), text.len());
        Cutter {
            text,
            low,
            cut: vec![false; text.len()],
            end_of: rustc_hash::FxHashMap::default(),
            start_of: rustc_hash::FxHashMap::default(),
        }
    }

    /// The end of the cut that starts at `at`, a boundary of the current text.
    fn cut_from(&self, at: usize) -> Option<usize> {
        if at < self.cut.len() && self.cut[at] {
            Some(self.end_of[&(at as u32)] as usize)
        } else {
            None
        }
    }

    /// The start of the cut that ends at `at`, a boundary of the current text.
    fn cut_to(&self, at: usize) -> Option<usize> {
        if at > 0 && self.cut[at - 1] {
            Some(self.start_of[&(at as u32)] as usize)
        } else {
            None
        }
    }

    /// Cuts `needles` (sorted, at least 8 characters each) as [`beyond_copies`] says, and
    /// returns the rest.
    ///
    /// Every occurrence of every copy in the original is found in one scan. A copy's turn
    /// takes those of its occurrences still in the text (checked byte by byte, a cut reading
    /// as a space), leftmost first and not overlapping. A cut can make an occurrence of a
    /// shorter copy across the space it leaves, or change a nearby "Σ" to "ς" or back, so
    /// the text around each change is scanned again for the copies still to come. Copies are
    /// trimmed, so an occurrence starts and ends with a byte of the original.
    fn cut_all(mut self, needles: &[String]) -> String {
        let turns = Turns::of(needles);
        let patterns: Vec<&[u8]> = (0..turns.first_turn.len())
            .map(|p| turns.pattern(p))
            .collect();
        let Some(finder) = CopyFinder::new(&patterns) else {
            return cut_each_in_turn(self.text, needles);
        };
        // Where each pattern starts in the original, by pattern then start.
        let mut found: Vec<(u32, u32)> = Vec::new();
        finder.scan(&self.low, |p, start, _| {
            found.push((p as u32, start as u32))
        });
        found.sort_unstable();
        // Occurrences that changes made, by pattern.
        let mut made: rustc_hash::FxHashMap<usize, Vec<u32>> = rustc_hash::FxHashMap::default();
        let has_sigma = self.text.contains('Σ');
        for (turn, &p) in turns.pattern_of.iter().enumerate() {
            let at = found.partition_point(|&(q, _)| (q as usize) < p);
            let mut starts: Vec<u32> = found[at..]
                .iter()
                .take_while(|&&(q, _)| q as usize == p)
                .map(|&(_, s)| s)
                .collect();
            if let Some(m) = made.remove(&p) {
                starts.extend(m);
                starts.sort_unstable();
                starts.dedup();
            }
            let mut changes = self.cut_turn(&starts, patterns[p]);
            let reach = turns.reach[turn + 1];
            if reach == 0 || changes.is_empty() {
                continue;
            }
            if has_sigma {
                self.relower_sigmas(&mut changes);
            }
            for &(s, e) in &changes {
                self.scan_around(s, e, reach, &finder, |q, start| {
                    if turns.last_turn[q] > turn {
                        made.entry(q).or_default().push(start);
                    }
                });
            }
        }
        self.rest()
    }

    /// Cuts the occurrences of `pattern` from `starts` (sorted) that are still in the text,
    /// leftmost first and not overlapping; the cuts made.
    fn cut_turn(&mut self, starts: &[u32], pattern: &[u8]) -> Vec<(usize, usize)> {
        let mut changes: Vec<(usize, usize)> = Vec::new();
        let mut from = 0;
        for &s in starts {
            let s = s as usize;
            if s < from {
                continue;
            }
            if let Some(e) = self.occurs_at(s, pattern) {
                self.cut_out(s, e);
                changes.push((s, e));
                from = e;
            }
        }
        changes
    }

    /// Lower-cases anew each "Σ" next to one of the cuts in `changes` (a cut changes what the
    /// final-sigma rule sees), adding each "Σ" whose lower case changed to `changes`.
    fn relower_sigmas(&mut self, changes: &mut Vec<(usize, usize)>) {
        for i in 0..changes.len() {
            let (s, e) = changes[i];
            let before = self.context_before(s);
            let after = self.context_after(e);
            for (q, c) in [before, after].into_iter().flatten() {
                if c == 'Σ' {
                    let lower = self.sigma_lower(q);
                    if self.low[q..q + 2] != *lower.as_bytes() {
                        self.low[q..q + 2].copy_from_slice(lower.as_bytes());
                        changes.push((q, q + 2));
                    }
                }
            }
        }
    }

    /// Whether `pattern` occurs in the current text from `s` (a byte that was not cut when
    /// it was found); its end.
    fn occurs_at(&self, s: usize, pattern: &[u8]) -> Option<usize> {
        if self.cut[s] {
            return None;
        }
        let mut at = s;
        for &b in pattern {
            if at >= self.low.len() {
                return None;
            }
            if let Some(end) = self.cut_from(at) {
                if b != b' ' {
                    return None;
                }
                at = end;
            } else {
                if self.low[at] != b {
                    return None;
                }
                at += 1;
            }
        }
        Some(at)
    }

    /// Makes `s..e` a cut, taking in the cuts inside it.
    fn cut_out(&mut self, s: usize, e: usize) {
        let mut at = s;
        while at < e {
            if let Some(end) = self.cut_from(at) {
                self.end_of.remove(&(at as u32));
                self.start_of.remove(&(end as u32));
                at = end;
            } else {
                self.cut[at] = true;
                at += 1;
            }
        }
        self.end_of.insert(s as u32, e as u32);
        self.start_of.insert(e as u32, s as u32);
    }

    /// The first character before offset `at` of the current text that the final-sigma rule
    /// does not skip, with its offset (a cut reads as a space).
    fn context_before(&self, mut at: usize) -> Option<(usize, char)> {
        while at > 0 {
            if let Some(start) = self.cut_to(at) {
                return Some((start, ' '));
            }
            let c = self.text[..at].chars().next_back()?;
            at -= c.len_utf8();
            if SigmaContext::of(c) != SigmaContext::Ignorable {
                return Some((at, c));
            }
        }
        None
    }

    /// The first character from offset `at` on that the final-sigma rule does not skip.
    fn context_after(&self, mut at: usize) -> Option<(usize, char)> {
        while at < self.text.len() {
            if self.cut_from(at).is_some() {
                return Some((at, ' '));
            }
            let c = self.text[at..].chars().next()?;
            if SigmaContext::of(c) != SigmaContext::Ignorable {
                return Some((at, c));
            }
            at += c.len_utf8();
        }
        None
    }

    /// The lower case of the "Σ" at offset `q` in the current text.
    fn sigma_lower(&self, q: usize) -> &'static str {
        let cased = |c: Option<(usize, char)>| {
            c.is_some_and(|(_, c)| SigmaContext::of(c) == SigmaContext::Cased)
        };
        if cased(self.context_before(q)) && !cased(self.context_after(q + 2)) {
            "ς"
        } else {
            "σ"
        }
    }

    /// Calls `found(pattern, start)` for every occurrence in the current text of a pattern
    /// of at most `reach` bytes that overlaps the change at `s..e` (a cut, or a "Σ" lower-cased
    /// anew); `start` is its first byte's offset.
    fn scan_around(
        &self,
        s: usize,
        e: usize,
        reach: usize,
        finder: &CopyFinder,
        mut found: impl FnMut(usize, u32),
    ) {
        // The bytes of the current text around the change, with their original offsets.
        let mut bytes: Vec<(u8, u32)> = Vec::with_capacity(2 * reach + 2);
        let mut at = s;
        while bytes.len() + 1 < reach && at > 0 {
            if let Some(start) = self.cut_to(at) {
                bytes.push((b' ', start as u32));
                at = start;
            } else {
                at -= 1;
                bytes.push((self.low[at], at as u32));
            }
        }
        bytes.reverse();
        let lo = bytes.len();
        if self.cut_from(s) == Some(e) {
            bytes.push((b' ', s as u32));
        } else {
            bytes.extend((s..e).map(|i| (self.low[i], i as u32)));
        }
        let hi = bytes.len();
        let mut at = e;
        while bytes.len() + 1 < hi + reach && at < self.low.len() {
            if let Some(end) = self.cut_from(at) {
                bytes.push((b' ', at as u32));
                at = end;
            } else {
                bytes.push((self.low[at], at as u32));
                at += 1;
            }
        }
        let hay: Vec<u8> = bytes.iter().map(|&(b, _)| b).collect();
        finder.scan(&hay, |p, start, end| {
            if start < hi && end > lo {
                found(p, bytes[start].1);
            }
        });
    }

    /// The current text: the original with each cut as one space.
    fn rest(&self) -> String {
        let mut cuts: Vec<(u32, u32)> = self.end_of.iter().map(|(&s, &e)| (s, e)).collect();
        cuts.sort_unstable();
        let mut out = String::with_capacity(self.text.len());
        let mut kept = 0;
        for (s, e) in cuts {
            out.push_str(&self.text[kept..s as usize]);
            out.push(' ');
            kept = e as usize;
        }
        out.push_str(&self.text[kept..]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every report of `finder` on `hay`, sorted.
    fn reports(finder: &CopyFinder, hay: &[u8]) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        finder.scan(hay, |p, s, e| out.push((p, s, e)));
        out.sort_unstable();
        out
    }

    #[test]
    fn the_searches_one_by_one_report_what_the_automaton_reports() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..5_000 {
            let hay: Vec<u8> = (0..next(80)).map(|_| b"ab a"[next(4)]).collect();
            let mut patterns: Vec<Vec<u8>> = Vec::new();
            for _ in 0..1 + next(SEARCHED_EACH) {
                let p: Vec<u8> = (0..1 + next(5)).map(|_| b"ab a"[next(4)]).collect();
                if !patterns.contains(&p) {
                    patterns.push(p);
                }
            }
            let patterns: Vec<&[u8]> = patterns.iter().map(Vec::as_slice).collect();
            let each = CopyFinder::new(&patterns).unwrap();
            assert!(matches!(each, CopyFinder::Each(_)));
            let automaton = aho_corasick::AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::Standard)
                .build(&patterns)
                .map(CopyFinder::Automaton)
                .unwrap();
            assert_eq!(reports(&each, &hay), reports(&automaton, &hay));
        }
    }

    #[test]
    fn copied_inputs_are_set_apart() {
        let t = "Something is wrong with my camera flash, and that is what brought this about: I cannot take new Photos now.";
        let rest = beyond_copies(t, &["I cannot take new Photos now."]);
        assert!(!cb_model::text::looks_like_refusal(&rest), "{rest}");
        assert!(cb_model::text::looks_like_refusal(t));
        assert!(rest.contains("camera flash"));
    }

    /// `beyond_copies` as it was before it became linear (issue 22), the reference of the
    /// tests below: every copy lower-cases and searches the whole text again.
    fn beyond_copies_reference(text: &str, copied: &[&str]) -> String {
        // The old loop, kept in `copies` for the texts the automaton cannot cut.
        crate::copies::cut_each_in_turn(text, &crate::copies::needles(copied))
    }

    #[test]
    fn copies_are_cut_as_the_one_by_one_rule_cut_them() {
        let cases: &[(&str, &[&str], &str)] = &[
            // Case, a copied sentence inside a longer answer, twice, and a final period.
            (
                "He said: I CANNOT take new photos now. Then i cannot take new photos now!",
                &["I cannot take new photos now."],
                "He said:  . Then  !",
            ),
            // Longest first: the shorter copy inside the longer one is not cut again.
            (
                "The duke crossed the sea in 1066, and the duke crossed the sea.",
                &["the duke crossed", "The duke crossed the sea in 1066"],
                " , and   the sea.",
            ),
            // Overlapping occurrences of one copy: leftmost first, not overlapping.
            ("abababababab", &["abababab"], " abab"),
            // A cut joins a shorter copy across the space it leaves.
            (
                "left side XXXXXXXXXXXX right side",
                &["XXXXXXXXXXXX", "side   right"],
                "left   side",
            ),
            // Multibyte characters that keep their length lower-cased.
            (
                "Ça coûte ÉNORMÉMENT, dit Zoë. Ça coûte énormément.",
                &["ça coûte énormément"],
                " , dit Zoë.  .",
            ),
            // "Σ" lower-cases by its surroundings, and a cut changes them: "ΚΑΛΟΣ.ΑΛΦΑ" has
            // "σ", and once "ΑΛΦΑ ..." is cut, "ς" (the copy then matches); ".Σ" after
            // "ΓΑΜΜΑ" has "ς", and once "ΑΛΦΑ ... ΓΑΜΜΑ" is cut, "σ".
            (
                "ΜΕΓΑΛΟΣ ΚΑΛΟΣ.ΑΛΦΑ ΒΗΤΑ ΓΑΜΜΑ",
                &["αλφα βητα γαμμα", "μεγαλος καλος"],
                " . ",
            ),
            (
                "ΑΛΦΑ ΒΗΤΑ ΓΑΜΜΑ.Σ ΩΡΑΙΟ",
                &["αλφα βητα γαμμα", ".σ ωραιο"],
                "  ",
            ),
            // A text whose lower case is longer ("İ" is "i̇") is left as it is.
            (
                "İstanbul: I cannot take new photos now.",
                &["I cannot take new photos now."],
                "İstanbul: I cannot take new photos now.",
            ),
            // Short copies and no copies cut nothing.
            ("Short one here.", &["Short", ""], "Short one here."),
            ("", &["anything at all"], ""),
        ];
        for &(text, copied, want) in cases {
            let reference = beyond_copies_reference(text, copied);
            assert_eq!(reference, want, "reference on {text:?}");
            assert_eq!(beyond_copies(text, copied), want, "on {text:?}");
        }
        // "İ" (one byte longer lower-cased) and the Kelvin sign (two shorter) in equal
        // measure: the offsets no longer line up, and the copies are cut one by one as before.
        let text = "İİ\u{212A} abcdefghij and more abcdefghij";
        assert_eq!(
            beyond_copies(text, &["abcdefghij"]),
            beyond_copies_reference(text, &["abcdefghij"])
        );
    }

    #[test]
    fn copies_are_cut_as_before_on_random_texts() {
        // Few letters, so that copies overlap, repeat and meet across cuts; cased and
        // case-ignorable neighbours of "Σ".
        const CHARS: &[char] = &[
            'a', 'b', 'A', 'B', ' ', ' ', '.', '\'', 'Σ', 'σ', 'ς', 'é', 'É', 'ß', 'x', 'Ω',
        ];
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..20_000 {
            let len = next(60);
            let text: String = (0..len).map(|_| CHARS[next(CHARS.len())]).collect();
            let chars: Vec<char> = text.chars().collect();
            let mut copied: Vec<String> = Vec::new();
            for _ in 0..next(6) {
                let n = 8 + next(10);
                if chars.len() > n + 8 && next(3) == 0 {
                    // A piece of the text, and a shorter copy of what its cut joins: the
                    // characters before it, a space, the characters after it.
                    let s = 1 + next(chars.len() - n - 2);
                    copied.push(chars[s..s + n].iter().collect());
                    let before = 1 + next(s.min(6));
                    let after = 1 + next((chars.len() - s - n).min(6));
                    let joined: String = chars[s - before..s]
                        .iter()
                        .chain([' '].iter())
                        .chain(&chars[s + n..s + n + after])
                        .collect();
                    copied.push(joined);
                } else if chars.len() > n && next(3) > 0 {
                    // A piece of the text, its case changed here and there.
                    let s = next(chars.len() - n);
                    copied.push(
                        chars[s..s + n]
                            .iter()
                            .map(|&c| match next(3) {
                                0 => c.to_uppercase().next().unwrap_or(c),
                                1 => c.to_lowercase().next().unwrap_or(c),
                                _ => c,
                            })
                            .collect(),
                    );
                } else {
                    copied.push((0..n).map(|_| CHARS[next(CHARS.len())]).collect());
                }
            }
            let copied: Vec<&str> = copied.iter().map(String::as_str).collect();
            assert_eq!(
                beyond_copies(&text, &copied),
                beyond_copies_reference(&text, &copied),
                "{text:?} {copied:?}"
            );
        }
    }
}
