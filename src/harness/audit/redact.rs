//! Secret redaction for audit records. Names that look secret lose their value; value-shaped
//! secrets are redacted wherever they appear; leading environment assignments are split off a
//! command before its summary is derived. A `RegexSet` decides in one pass whether any rule
//! applies, so the common case (nothing secret) costs one scan.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::{Regex, RegexSet};

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Substrings (upper-case) that make a variable, flag or header name secret.
const SECRET_NAME_PARTS: [&str; 9] = [
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
];

/// Longest command summary kept, in characters; a here-doc is not metadata.
pub const MAX_SUMMARY_CHARS: usize = 1000;

/// Does `name` look like it holds a secret (`API_KEY`, `github_token`, `X-Auth-User`)?
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
}

/// The rules: a pattern and its replacement (`$n` refers to the pattern's groups).
const NAME_ALT: &str = "KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION";

fn rules() -> &'static (RegexSet, Vec<(Regex, String)>) {
    static RULES: OnceLock<(RegexSet, Vec<(Regex, String)>)> = OnceLock::new();
    RULES.get_or_init(|| {
        let r = REDACTED;
        let table: Vec<(String, String)> = vec![
            // PEM blocks, also a block cut off before its END line.
            (
                r"(?s)-----BEGIN [A-Z0-9 ]*-----.*?(?:-----END [A-Z0-9 ]*-----|\z)".into(),
                r.into(),
            ),
            (r"\bsk-[A-Za-z0-9_\-]{16,}".into(), r.into()),
            (
                r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})".into(),
                r.into(),
            ),
            (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b".into(), r.into()),
            (r"\bxox[baprs]-[A-Za-z0-9\-]{10,}".into(), r.into()),
            (
                r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+".into(),
                r.into(),
            ),
            (
                r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}".into(),
                format!("$1 {r}"),
            ),
            // URL userinfo: keep the user, drop the password.
            (
                r"\b([A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@]*):[^\s/@]+@".into(),
                format!("$1:{r}@"),
            ),
            // NAME=value or Name: value, wherever it appears (an inner `sh -c`, a query string).
            (
                format!(
                    r#"(?i)\b([A-Za-z0-9_.\-]*(?:{NAME_ALT})[A-Za-z0-9_.\-]*)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s&;'"]+)"#
                ),
                format!("$1$2{r}"),
            ),
            // --token VALUE: a secret-named flag followed by a separate value.
            (
                format!(
                    r#"(?i)(\s--?[A-Za-z0-9_\-]*(?:{NAME_ALT})[A-Za-z0-9_\-]*)(\s+)("[^"]*"|'[^']*'|[^\s\-][^\s]*)"#
                ),
                format!("$1$2{r}"),
            ),
        ];
        let mut compiled = Vec::new();
        let mut patterns = Vec::new();
        for (pattern, replacement) in table {
            // Every pattern is a literal above and is compiled in a unit test; one that failed
            // would be dropped rather than take the audit log down with it.
            if let Ok(re) = Regex::new(&pattern) {
                patterns.push(pattern);
                compiled.push((re, replacement));
            }
        }
        let set = RegexSet::new(&patterns).unwrap_or_else(|_| RegexSet::empty());
        (set, compiled)
    })
}

/// Literals at least one of which every rule above needs to match (in lower case). Text with
/// none of them cannot hold a secret, so the rules (whose compilation costs milliseconds) are
/// never built for it: most commands and environment values never pay for redaction.
const NEEDLES: [&str; 24] = [
    "-----begin",
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "akia",
    "asia",
    "xox",
    "eyj",
    "bearer",
    "basic",
    "://",
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "credential",
    "auth",
    "cookie",
    "session",
];

fn might_hold_secret(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    NEEDLES.iter().any(|n| lower.contains(n))
}

/// `text` with every value-shaped secret (and every secret-named value) replaced.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    if !might_hold_secret(text) {
        return Cow::Borrowed(text);
    }
    let (set, table) = rules();
    let hits = set.matches(text);
    if !hits.matched_any() {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_string();
    for i in hits.iter() {
        if let Some((re, replacement)) = table.get(i) {
            out = re.replace_all(&out, replacement.as_str()).into_owned();
        }
    }
    Cow::Owned(out)
}

/// A command as the audit log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSummary {
    /// The command from its executable on (leading assignments removed), redacted, bounded.
    pub summary: String,
    /// The leading `NAME=value` assignments, redacted.
    pub env: Vec<String>,
}

/// Split leading assignments (also after `env`) off `command` and redact both parts.
pub fn summarize_command(command: &str) -> CommandSummary {
    let tokens = shell_tokens(command);
    let mut env = Vec::new();
    let mut rest = command.len();
    let mut i = 0;
    while i < tokens.len() {
        let (start, tok) = tokens[i];
        if let Some(assignment) = redact_assignment(tok) {
            env.push(assignment);
            i += 1;
            continue;
        }
        // `env A=1 cmd`: the assignments after `env` are environment too.
        if tok == "env"
            && tokens
                .get(i + 1)
                .is_some_and(|(_, t)| assignment_name(t).is_some())
        {
            i += 1;
            continue;
        }
        rest = start;
        break;
    }
    let tail = command.get(rest..).unwrap_or("").trim();
    CommandSummary {
        summary: bound(&redact_text(tail)),
        env,
    }
}

/// `NAME=value` with the value replaced when the name looks secret, value-shape redacted if not.
fn redact_assignment(token: &str) -> Option<String> {
    let name = assignment_name(token)?;
    let value = &token[name.len() + 1..];
    Some(if is_secret_name(name) {
        format!("{name}={REDACTED}")
    } else {
        format!("{name}={}", redact_text(value))
    })
}

/// The variable name of a shell assignment token, if it is one.
fn assignment_name(token: &str) -> Option<&str> {
    let (name, _) = token.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(name)
}

/// Whitespace-separated words with their byte offsets, quotes and backslashes respected (enough
/// to find where the leading assignments end; the classifier does the real parse).
fn shell_tokens(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (Some('\''), '\'') => quote = None,
            (Some('\''), _) => {}
            (_, '\\') => escaped = true,
            (Some('"'), '"') => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, c) if c.is_whitespace() => {
                if let Some(st) = start.take() {
                    out.push((st, &s[st..i]));
                }
                continue;
            }
            (None, _) => {}
        }
        start.get_or_insert(i);
    }
    if let Some(st) = start {
        out.push((st, &s[st..]));
    }
    out
}

/// At most `MAX_SUMMARY_CHARS` characters, marked when cut.
fn bound(s: &str) -> String {
    match s.char_indices().nth(MAX_SUMMARY_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_quick_reject_lets_every_rule_see_its_secrets() {
        // One sample per rule, in odd cases: each must pass the literal prefilter and be redacted.
        for sample in [
            "-----BEGIN RSA PRIVATE KEY-----\nabc",
            "x sk-ABCDEFGHIJKLMNOPQRST",
            "ghp_ABCDEFGHIJKLMNOPQRSTUVWX",
            "github_pat_ABCDEFGHIJKLMNOPQRSTUVWX",
            "AKIAABCDEFGHIJKLMNOP",
            "ASIAABCDEFGHIJKLMNOP",
            "xoxb-1234567890-abc",
            "eyJhbGciOiJIUzI1.eyJzdWIiOiIx.sig",
            "BEARER abcdef123456",
            "Basic dXNlcjpwYXNz",
            "https://user:hunter2@example.invalid/",
            "MY_API_KEY=hunter2",
            "curl --Auth-Token hunter2",
        ] {
            assert!(super::might_hold_secret(sample), "{sample}");
            assert_ne!(super::redact_text(sample), sample, "{sample}");
        }
        assert!(!super::might_hold_secret("cargo test --all-targets"));
    }

    use super::*;

    #[test]
    fn every_rule_compiles() {
        assert_eq!(rules().1.len(), 10);
        assert_eq!(rules().0.len(), 10);
    }

    #[test]
    fn tokens_respect_quotes() {
        let t: Vec<&str> = shell_tokens(r#"A="x y" B='p q' c\ d e"#)
            .into_iter()
            .map(|t| t.1)
            .collect();
        assert_eq!(t, vec![r#"A="x y""#, "B='p q'", r"c\ d", "e"]);
    }
}
