//! Shell words after quote removal. A word keeps its value (quotes removed, escapes resolved) and
//! a pattern form in which every character that came from inside quotes is escaped, so brace and
//! glob expansion can later tell `{a,b}` from `"{a,b}"`. Anything whose value is decided only at
//! run time (expansions, substitutions, globs, tilde, brace lists) marks the word dynamic.

use serde::Serialize;

use super::budget::{Budget, Resource};

/// One shell word.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Word {
    /// The source text of the word.
    pub raw: String,
    /// The value after quote removal; dynamic parts are kept as written (`$HOME/x`).
    pub value: String,
    /// The value with quoted characters backslash-escaped (for brace/glob expansion).
    #[serde(skip)]
    pub pattern: String,
    /// Part of the value is only known when the command runs.
    pub dynamic: bool,
    /// A parameter expansion or substitution is part of the word.
    pub expands: bool,
    /// An unquoted glob character (`*`, `?`, `[`) is present.
    pub glob: bool,
    /// An unquoted brace list or sequence (`{a,b}`, `{1..3}`) is present.
    pub brace: bool,
    /// The word starts with an unquoted tilde.
    pub tilde: bool,
    /// Indices (into `ShellFacts::commands`) of commands run by substitutions inside this word.
    pub substitutions: Vec<usize>,
}

impl Word {
    pub(crate) fn new(raw: &str) -> Self {
        Word {
            raw: raw.to_string(),
            value: String::new(),
            pattern: String::new(),
            dynamic: false,
            expands: false,
            glob: false,
            brace: false,
            tilde: false,
            substitutions: Vec::new(),
        }
    }

    /// A static word built from a plain string (used for words taken apart by wrappers).
    pub fn literal(value: &str) -> Self {
        let mut w = Word::new(value);
        w.push_quoted(value);
        w
    }

    /// A word the shell never sees: a program fills it in when it runs the command (`xargs`
    /// appends what it reads). It may be anything, an option included.
    pub fn filled_at_run_time(raw: &str) -> Self {
        let mut w = Word::new(raw);
        w.push_dynamic(raw);
        w
    }

    /// Text that came from inside quotes: taken literally.
    pub(crate) fn push_quoted(&mut self, text: &str) {
        self.value.push_str(text);
        for c in text.chars() {
            if matches!(c, '{' | '}' | ',' | '\\' | '*' | '?' | '[' | ']' | '~') {
                self.pattern.push('\\');
            }
            self.pattern.push(c);
        }
    }

    /// Unquoted text whose escapes are already resolved, given with its escaped positions.
    pub(crate) fn push_unquoted_char(&mut self, c: char, escaped: bool) {
        self.value.push(c);
        if escaped && matches!(c, '{' | '}' | ',' | '\\' | '*' | '?' | '[' | ']' | '~') {
            self.pattern.push('\\');
        }
        self.pattern.push(c);
    }

    /// A part known only at run time, kept as written.
    pub(crate) fn push_dynamic(&mut self, raw: &str) {
        self.dynamic = true;
        self.expands = true;
        self.value.push_str(raw);
        // Escape it in the pattern so brace detection ignores `${x}`.
        for c in raw.chars() {
            if matches!(c, '{' | '}' | ',' | '\\' | '*' | '?' | '[' | ']' | '~') {
                self.pattern.push('\\');
            }
            self.pattern.push(c);
        }
    }

    /// Decide glob/brace/tilde once the whole word is assembled. Finding brace lists is charged
    /// to `budget`; a word too costly to scan counts as a brace expansion (so as dynamic).
    pub(crate) fn finish(&mut self, budget: &Budget) {
        let chars: Vec<char> = self.pattern.chars().collect();
        self.tilde = chars.first() == Some(&'~');
        let mut escaped = false;
        for &c in &chars {
            if escaped {
                escaped = false;
                continue;
            }
            match c {
                '\\' => escaped = true,
                '*' | '?' | '[' => self.glob = true,
                _ => {}
            }
        }
        self.brace = !brace_expand(&self.pattern, 2, budget).is_single();
        if self.glob || self.brace || self.tilde {
            self.dynamic = true;
        }
    }

    /// True when the word's value is fully known before the command runs.
    pub fn is_static(&self) -> bool {
        !self.dynamic
    }

    /// The words bash would produce by brace expansion (at most `limit`; `None` beyond it).
    /// Words without brace lists expand to themselves.
    pub fn brace_expansion(&self, limit: usize) -> Option<Vec<String>> {
        self.brace_expansion_within(limit, &Budget::default())
    }

    /// `brace_expansion`, its work charged to `budget` (`None` too when the budget runs out).
    pub fn brace_expansion_within(&self, limit: usize, budget: &Budget) -> Option<Vec<String>> {
        match brace_expand(&self.pattern, limit, budget) {
            Expansion::Words(ws) => Some(ws.iter().map(|w| unescape_pattern(w)).collect()),
            Expansion::TooMany => None,
        }
    }
}

enum Expansion {
    Words(Vec<String>),
    TooMany,
}

impl Expansion {
    fn is_single(&self) -> bool {
        matches!(self, Expansion::Words(w) if w.len() == 1)
    }
}

fn unescape_pattern(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Bash brace expansion over a pattern string (escaped characters are literal): comma lists with
/// nesting and `{a..b}` sequences of integers or single letters. Every character scanned or
/// copied is charged to `budget`: `{{{{…` without a `}` is scanned once per brace, which for a
/// megabyte of braces was minutes of work.
fn brace_expand(p: &str, limit: usize, budget: &Budget) -> Expansion {
    let chars: Vec<char> = p.chars().collect();
    let mut out = Vec::new();
    let mut work = Work {
        used: 0,
        allowance: budget.remaining(Resource::BraceWork),
    };
    let done = expand_into(&chars, limit, &mut out, 0, &mut work);
    let charged = budget.charge(Resource::BraceWork, work.used);
    if done && charged {
        Expansion::Words(out)
    } else {
        Expansion::TooMany
    }
}

/// Brace-expansion work done, against what the budget allows.
struct Work {
    used: u64,
    allowance: u64,
}

impl Work {
    /// Spend `n` steps; false once past the allowance.
    fn spend(&mut self, n: usize) -> bool {
        self.used = self.used.saturating_add(n as u64);
        self.used <= self.allowance
    }
}

/// How many brace groups one word may nest or chain before it counts as too many: each level
/// copies the word and recurses, and 16,000 `{a,b}` once overflowed the stack (1.3 GB at 10,000).
const MAX_BRACE_GROUPS: usize = 32;

fn expand_into(
    chars: &[char],
    limit: usize,
    out: &mut Vec<String>,
    groups: usize,
    work: &mut Work,
) -> bool {
    if groups > MAX_BRACE_GROUPS {
        return false;
    }
    // Find the first unescaped '{' that has a matching '}' with a top-level ',' or '..'.
    let mut i = 0;
    while i < chars.len() {
        if !work.spend(1) {
            return false;
        }
        match chars[i] {
            '\\' => i += 2,
            '{' => {
                if let Some((close, alternatives)) = brace_group(chars, i, work) {
                    let prefix = &chars[..i];
                    let suffix = &chars[close + 1..];
                    for alt in alternatives {
                        if !work.spend(prefix.len() + alt.len() + suffix.len()) {
                            return false;
                        }
                        let mut combined: Vec<char> = prefix.to_vec();
                        combined.extend(alt);
                        combined.extend_from_slice(suffix);
                        if !expand_into(&combined, limit, out, groups + 1, work) {
                            return false;
                        }
                    }
                    return true;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    if out.len() >= limit {
        return false;
    }
    out.push(chars.iter().collect());
    true
}

/// For the '{' at `open`: its matching '}' and the alternatives, when it is a real brace list.
fn brace_group(chars: &[char], open: usize, work: &mut Work) -> Option<(usize, Vec<Vec<char>>)> {
    let mut depth = 0usize;
    let mut parts: Vec<Vec<char>> = vec![Vec::new()];
    let mut i = open + 1;
    while i < chars.len() {
        if !work.spend(1) {
            return None;
        }
        let c = chars[i];
        match c {
            '\\' => {
                let last = parts.last_mut()?;
                last.push(c);
                if let Some(n) = chars.get(i + 1) {
                    last.push(*n);
                }
                i += 2;
                continue;
            }
            '{' => depth += 1,
            '}' if depth == 0 => {
                if parts.len() > 1 {
                    return Some((i, parts));
                }
                return sequence(&parts[0]).map(|seq| (i, seq));
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(Vec::new());
                i += 1;
                continue;
            }
            _ => {}
        }
        parts.last_mut()?.push(c);
        i += 1;
    }
    None
}

/// More members than this and a sequence is not listed: bash would produce them all, but the
/// classifier only needs to know that it is a brace expansion and what its endpoints are.
const MAX_SEQUENCE_MEMBERS: u64 = 10_000;

/// `a..b` (integers or single letters, optional `..step`) to its members; None if not a sequence.
///
/// Endpoints and step are any `i64` bash accepts, so the distance between them is computed in
/// `i128` (`{-9223372036854775808..9223372036854775807}` spans 2^64) and every step is checked:
/// a wrapped addition once walked past `b` forever and exhausted memory.
fn sequence(body: &[char]) -> Option<Vec<Vec<char>>> {
    let text: String = body.iter().collect();
    let pieces: Vec<&str> = text.split("..").collect();
    if pieces.len() < 2 || pieces.len() > 3 {
        return None;
    }
    let step: u64 = match pieces.get(2) {
        Some(s) => s.parse::<i64>().ok()?.unsigned_abs().max(1),
        None => 1,
    };
    if let (Ok(a), Ok(b)) = (pieces[0].parse::<i64>(), pieces[1].parse::<i64>()) {
        return Some(integer_sequence(a, b, step).unwrap_or_else(|| {
            // Too many to list; still a brace expansion. Return the endpoints only.
            vec![pieces[0].chars().collect(), pieces[1].chars().collect()]
        }));
    }
    let (a, b) = (single_char(pieces[0])?, single_char(pieces[1])?);
    if !a.is_ascii_alphabetic() || !b.is_ascii_alphabetic() {
        return None;
    }
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let step = usize::try_from(step).unwrap_or(usize::MAX);
    Some((lo..=hi).step_by(step).map(|c| vec![c]).collect())
}

/// The members of `{a..b..step}`, or None when there are more than [`MAX_SEQUENCE_MEMBERS`].
fn integer_sequence(a: i64, b: i64, step: u64) -> Option<Vec<Vec<char>>> {
    let distance = (i128::from(b) - i128::from(a)).unsigned_abs();
    let count = distance / u128::from(step) + 1;
    if count > u128::from(MAX_SEQUENCE_MEMBERS) {
        return None;
    }
    let direction: i128 = if a <= b { 1 } else { -1 };
    let stride = i128::from(step) * direction;
    // `count` is at most MAX_SEQUENCE_MEMBERS, and every member lies between `a` and `b`, so the
    // i128 products neither overflow nor leave the i64 range.
    Some(
        (0..count)
            .map(|k| {
                (i128::from(a) + stride * k as i128)
                    .to_string()
                    .chars()
                    .collect()
            })
            .collect(),
    )
}

fn single_char(s: &str) -> Option<char> {
    let mut it = s.chars();
    let c = it.next()?;
    it.next().is_none().then_some(c)
}

/// Decode the body of an ANSI-C quoted string (`$'...'`, quotes already stripped).
pub(crate) fn decode_ansi_c(body: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            out.push(c);
            continue;
        }
        let e = chars[i];
        i += 1;
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'c' => {
                if let Some(&n) = chars.get(i) {
                    i += 1;
                    out.push(char::from((n as u8 & 0x1f) & 0x7f));
                }
            }
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let start = i;
                while i < chars.len() && i - start < max && chars[i].is_ascii_hexdigit() {
                    i += 1;
                }
                let digits: String = chars[start..i].iter().collect();
                match u32::from_str_radix(&digits, 16)
                    .ok()
                    .and_then(char::from_u32)
                {
                    Some(ch) if !digits.is_empty() => out.push(ch),
                    _ => {
                        out.push('\\');
                        out.push(e);
                    }
                }
            }
            '0'..='7' => {
                let start = i - 1;
                while i < chars.len() && i - start < 3 && ('0'..='7').contains(&chars[i]) {
                    i += 1;
                }
                let digits: String = chars[start..i].iter().collect();
                let n = u32::from_str_radix(&digits, 8).unwrap_or(0) & 0xff;
                out.push(char::from_u32(n).unwrap_or('\u{fffd}'));
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unquoted(s: &str) -> Word {
        let mut w = Word::new(s);
        for c in s.chars() {
            w.push_unquoted_char(c, false);
        }
        w.finish(&Budget::default());
        w
    }

    #[test]
    fn brace_lists_expand_like_bash() {
        let w = unquoted("{rm,-rf,/}");
        assert!(w.brace && w.dynamic);
        assert_eq!(w.brace_expansion(100).unwrap(), vec!["rm", "-rf", "/"]);
        assert_eq!(
            unquoted("a{b,c{d,e}}f").brace_expansion(100).unwrap(),
            vec!["abf", "acdf", "acef"]
        );
        assert_eq!(
            unquoted("x{1..3}").brace_expansion(100).unwrap(),
            vec!["x1", "x2", "x3"]
        );
        assert_eq!(
            unquoted("{a..c}").brace_expansion(100).unwrap(),
            vec!["a", "b", "c"]
        );
        assert!(!unquoted("{}").brace && !unquoted("{a}").brace && !unquoted("a,b").brace);
        assert!(unquoted("{1..100000}").brace);
        assert!(unquoted("{a,b}{c,d}{e,f}").brace_expansion(4).is_none());
        // Thousands of groups are too many at once, not a recursion per group.
        assert!(
            unquoted(&"{a,b}".repeat(16_000))
                .brace_expansion(64)
                .is_none()
        );
        let ones = "{1..1}".repeat(40);
        assert!(unquoted(&ones).brace_expansion(64).is_none());
        assert_eq!(
            unquoted(&"{1..1}".repeat(8)).brace_expansion(64).unwrap(),
            ["1".repeat(8)]
        );
    }

    /// Issue 10: both once overflowed i64 and killed the release binary (out of memory).
    #[test]
    fn sequences_at_the_ends_of_i64_do_not_overflow() {
        let whole = unquoted("{-9223372036854775808..9223372036854775807}");
        assert!(whole.brace);
        assert_eq!(
            whole.brace_expansion(64).unwrap(),
            ["-9223372036854775808", "9223372036854775807"],
            "too many to list: the endpoints stand for it"
        );
        assert_eq!(
            unquoted("{1..9223372036854775807..4611686018427387904}")
                .brace_expansion(64)
                .unwrap(),
            ["1", "4611686018427387905"]
        );
        // Bash leaves these two unexpanded (its own arithmetic refuses them); listing them only
        // makes the word dynamic, which can only make a command less trusted.
        assert_eq!(
            unquoted("{9223372036854775807..-9223372036854775808..9223372036854775807}")
                .brace_expansion(64)
                .unwrap(),
            ["9223372036854775807", "0", "-9223372036854775807"]
        );
        assert_eq!(
            unquoted("{-9223372036854775808..-9223372036854775806..-9223372036854775808}")
                .brace_expansion(64)
                .unwrap(),
            ["-9223372036854775808"]
        );
        assert_eq!(
            unquoted("{1..10..3}").brace_expansion(64).unwrap(),
            ["1", "4", "7", "10"]
        );
        assert_eq!(
            unquoted("{10..1..-3}").brace_expansion(64).unwrap(),
            ["10", "7", "4", "1"]
        );
        assert_eq!(
            unquoted("{a..z..9223372036854775807}")
                .brace_expansion(64)
                .unwrap(),
            ["a"]
        );
    }

    #[test]
    fn quoted_braces_do_not_expand() {
        let mut w = Word::new("\"{a,b}\"");
        w.push_quoted("{a,b}");
        w.finish(&Budget::default());
        assert!(!w.brace && !w.dynamic);
        assert_eq!(w.brace_expansion(10).unwrap(), vec!["{a,b}"]);
    }

    #[test]
    fn ansi_c_escapes_decode() {
        assert_eq!(decode_ansi_c(r"\x72m"), "rm");
        assert_eq!(decode_ansi_c(r"\162\155"), "rm");
        assert_eq!(decode_ansi_c(r"\u0072m\n"), "rm\n");
        assert_eq!(decode_ansi_c(r"it\'s"), "it's");
        assert_eq!(decode_ansi_c(r"\q"), "\\q");
    }
}
