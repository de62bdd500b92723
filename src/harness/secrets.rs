//! Secret detection, shared by the audit log's redaction and the sandbox's environment
//! allow-list. A leaf: it imports nothing of the crate, so both can use it without the
//! execution layer knowing the audit log exists. Names that look secret lose their value;
//! value-shaped secrets are redacted wherever they appear. A `RegexSet` decides in one pass
//! whether any rule applies, so the common case (nothing secret) costs one scan.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::{Regex, RegexSet};

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Substrings (upper-case) that make a variable, flag or header name secret.
const SECRET_NAME_PARTS: [&str; 13] = [
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "SSHPASS",
    "MYSQL_PWD",
    "PGPASS",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
];

/// Does `name` look like it holds a secret (`API_KEY`, `github_token`, `X-Auth-User`)?
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
}

/// A value as a rule takes it: a quoted string, or one unquoted word.
const VALUE: &str = r#"("[^"]*"|'[^']*'|[^\s'"]+)"#;

/// Where a tool's own options end: the next command of a list or pipeline.
const SAME_COMMAND: &str = r"[^|;&\n]*?";

/// The rules: a pattern and its replacement (`$n` refers to the pattern's groups).
fn rules() -> &'static (RegexSet, Vec<(Regex, String)>) {
    static RULES: OnceLock<(RegexSet, Vec<(Regex, String)>)> = OnceLock::new();
    RULES.get_or_init(|| {
        let r = REDACTED;
        let names = SECRET_NAME_PARTS.join("|");
        let cmd = SAME_COMMAND;
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
            // A header whose name looks secret (`-H 'Authorization: Token x'`, `Cookie: a=b`):
            // its whole value, to the end of the quoted argument or the line. The name must
            // start a word, so `http://auth:8080` is a host and port, not a header.
            (
                format!(
                    r#"(?i)(^|[\s'"])([A-Za-z0-9_\-]*(?:{names})[A-Za-z0-9_\-]*\s*:\s*)[^'"\s][^'"\n]*"#
                ),
                format!("$1$2{r}"),
            ),
            // URL userinfo: keep the user, drop the password (which may itself hold `@`).
            (
                r"\b([A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@]*):[^\s/]+@".into(),
                format!("$1:{r}@"),
            ),
            // git's extra HTTP header (`-c http.extraHeader=…`, also per URL): the header.
            (
                r#"(?i)(http\.[^\s=]*extraheader\s*=\s*)("[^"]*"|'[^']*'|[^'"\n]*)"#.into(),
                format!("$1{r}"),
            ),
            // A JSON member whose name looks secret (`-d '{"password": "x"}'`).
            (
                format!(r#"(?i)("[A-Za-z0-9_.\-]*(?:{names})[A-Za-z0-9_.\-]*"\s*:\s*)"[^"]*""#),
                format!("$1\"{r}\""),
            ),
            // NAME=value or Name: value, wherever it appears (an inner `sh -c`, a query string).
            (
                format!(
                    r#"(?i)\b([A-Za-z0-9_.\-]*(?:{names})[A-Za-z0-9_.\-]*)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s&;'"]+)"#
                ),
                format!("$1$2{r}"),
            ),
            // --token VALUE: a secret-named flag followed by a separate value.
            (
                format!(
                    r#"(?i)(\s--?[A-Za-z0-9_\-]*(?:{names})[A-Za-z0-9_\-]*)(\s+)("[^"]*"|'[^']*'|[^\s\-][^\s]*)"#
                ),
                format!("$1$2{r}"),
            ),
            // A flag ending in `pass` (`--pass X`, keytool's `-storepass X`, `--passphrase=X`).
            (
                r#"(?i)(\s--?[A-Za-z0-9_\-]*pass(?:phrase|wd|word)?)(\s+|=)("[^"]*"|'[^']*'|[^\s'"\-][^\s'"]*)"#.into(),
                format!("$1$2{r}"),
            ),
            // `user:password` after curl's, wget's or a client's user option (`-u`, `-U`,
            // `--user`, `--proxy-user`), attached or not; also smbclient's `-U user%password`.
            (
                r#"(\s(?:-u|-U|--user|--proxy-user)(?:\s*|=)['"]?[^\s:%'"]*)([:%])[^\s'"]+"#.into(),
                format!("$1$2{r}"),
            ),
            // Tools whose password option has a short name of its own.
            (
                format!(r"(?i)(\bsshpass\b{cmd}\s-p)(\s*){VALUE}"),
                format!("$1$2{r}"),
            ),
            (
                format!(
                    r"(?i)(\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|mysqlsh|mariadb|mariadb-dump|mariadb-admin)\b{cmd}\s-p){VALUE}"
                ),
                format!("$1{r}"),
            ),
            (
                format!(r"(?i)(\blogin\b{cmd}\s-p)(\s*){VALUE}"),
                format!("$1$2{r}"),
            ),
            (
                format!(r"(?i)(\bredis-cli\b{cmd}\s-a)(\s+){VALUE}"),
                format!("$1$2{r}"),
            ),
            (
                format!(r"(?i)(\bldap[a-z]*\b{cmd}\s-w)(\s+){VALUE}"),
                format!("$1$2{r}"),
            ),
            (
                format!(r"(?i)(\b(?:sqlcmd|ipmitool)\b{cmd}\s-P)(\s*){VALUE}"),
                format!("$1$2{r}"),
            ),
            (
                format!(r"(?i)(\bopenssl\b{cmd}\s-k)(\s+){VALUE}"),
                format!("$1$2{r}"),
            ),
            (
                format!(r"(?i)(\bcurl\b{cmd}\s(?:-b|--cookie))(\s+|=){VALUE}"),
                format!("$1$2{r}"),
            ),
            // openssl's `pass:SECRET` password source.
            (r#"(?i)\b(pass:)[^\s'"]+"#.into(), format!("$1{r}")),
            // `aws configure set aws_secret_access_key VALUE`.
            (
                format!(r"(?i)\b(aws_secret_access_key|aws_session_token)(\s+){VALUE}"),
                format!("$1$2{r}"),
            ),
            // A password piped into a reader of passwords: `echo X | docker login
            // --password-stdin`, `echo X | sudo -S …`, `echo user:X | chpasswd`.
            (
                format!(
                    r#"(?i)\b((?:echo|printf)\s+(?:-[neE]+\s+)?)("[^"]*"|'[^']*'|[^\s|;&'"]+)(\s*\|\s*{cmd}(?:--password-stdin|\bsudo\s+-S|\bchpasswd\b|--stdin))"#
                ),
                format!("$1{r}$3"),
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
/// (`pass` stands for `password`, `passwd`, `passphrase`, `sshpass`, `pgpass` and `pass:`.)
const NEEDLES: [&str; 38] = [
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
    "pass",
    "mysql_pwd",
    "credential",
    "auth",
    "cookie",
    "session",
    "extraheader",
    "-u",
    "--user",
    "mysql",
    "mariadb",
    "login",
    "redis-cli",
    "ldap",
    "sqlcmd",
    "ipmitool",
    "openssl",
    "curl",
    "sudo",
    "stdin",
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

/// Secret values Spear holds by name (the variables the person hands an MCP server), looked
/// for verbatim wherever Spear records or shows text and replaced by `[REDACTED:NAME]`. A
/// value shorter than `KnownSecrets::MIN_LEN` is not looked for: it would match ordinary text.
#[derive(Clone, Default)]
pub struct KnownSecrets {
    /// Longest value first, so a value that holds another is replaced whole.
    values: Vec<(String, String)>,
}

impl KnownSecrets {
    pub const MIN_LEN: usize = 8;

    /// From (name, value) pairs; short and repeated values are dropped.
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut values: Vec<(String, String)> = pairs
            .into_iter()
            .filter(|(_, v)| v.chars().count() >= Self::MIN_LEN)
            .collect();
        values.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        values.dedup_by(|a, b| a.1 == b.1);
        KnownSecrets { values }
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every known value replaced by `[REDACTED:NAME]`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for (name, value) in &self.values {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), &format!("[REDACTED:{name}]")));
            }
        }
        out
    }
}

/// Names only: a value is never printed.
impl std::fmt::Debug for KnownSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.values.iter().map(|(n, _)| n))
            .finish()
    }
}

#[cfg(test)]
mod known_tests {
    use super::KnownSecrets;

    #[test]
    fn known_values_are_replaced_by_name_and_never_printed() {
        let k = KnownSecrets::new([
            ("GITHUB_TOKEN".to_string(), "tok-1234567890".to_string()),
            ("SHORT".to_string(), "abc".to_string()),
            ("LONGER".to_string(), "tok-1234567890-extra".to_string()),
        ]);
        assert_eq!(
            k.redact("a tok-1234567890 b tok-1234567890-extra c abc"),
            "a [REDACTED:GITHUB_TOKEN] b [REDACTED:LONGER] c abc"
        );
        assert!(matches!(
            k.redact("nothing here"),
            std::borrow::Cow::Borrowed(_)
        ));
        let shown = format!("{k:?}");
        assert!(
            shown.contains("GITHUB_TOKEN") && !shown.contains("tok-"),
            "{shown}"
        );
        assert!(KnownSecrets::new([("A".into(), "1234567".into())]).is_empty());
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
        assert_eq!(rules().1.len(), 26);
        assert_eq!(rules().0.len(), 26);
    }
}
