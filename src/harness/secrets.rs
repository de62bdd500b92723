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

/// Secret values Spear knows by name: the variables the person hands an MCP server, the
/// secret-looking variables of Spear's environment (provider keys among them), the values of the
/// workspace's `.env` files. Looked for verbatim wherever Spear records or shows text (replaced
/// by `[REDACTED:NAME]`) and in what a call would send out (`names_in`). A value shorter than
/// `KnownSecrets::MIN_LEN`, or a common word, is not looked for: it would match ordinary text.
#[derive(Clone, Default)]
pub struct KnownSecrets {
    /// Longest value first, so a value that holds another is replaced whole.
    values: Vec<Known>,
}

#[derive(Clone)]
struct Known {
    name: String,
    /// Where Spear found it, for the person (`Spear's environment`, `.env`).
    origin: String,
    value: String,
}

impl KnownSecrets {
    pub const MIN_LEN: usize = 8;

    /// From (name, value) pairs of one origin; values that do not count are dropped.
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        KnownSecrets::default().with("", pairs)
    }

    /// These too, found in `origin`.
    pub fn with(mut self, origin: &str, pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        for (name, value) in pairs {
            if counts_as_secret(&value) && !self.values.iter().any(|k| k.value == value) {
                self.values.push(Known {
                    name,
                    origin: origin.to_string(),
                    value,
                });
            }
        }
        self.values.sort_by(|a, b| {
            b.value
                .len()
                .cmp(&a.value.len())
                .then_with(|| a.name.cmp(&b.name))
        });
        self
    }

    /// Both sets.
    pub fn merged(self, other: &KnownSecrets) -> Self {
        let mut out = self;
        for k in &other.values {
            out = out.with(&k.origin, [(k.name.clone(), k.value.clone())]);
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every known value replaced by `[REDACTED:NAME]`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for k in &self.values {
            if out.contains(k.value.as_str()) {
                out = Cow::Owned(out.replace(k.value.as_str(), &format!("[REDACTED:{}]", k.name)));
            }
        }
        out
    }

    /// Every string inside `value` redacted (keys are left: they are a schema's names).
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|i| self.redact_json(i)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|i| self.redact_json(i)),
            _ => {}
        }
    }

    /// The secrets whose value `text` carries, named for the person (`OPENAI_API_KEY from
    /// Spear's environment`), never by their value.
    pub fn names_in(&self, text: &str) -> Vec<String> {
        self.values
            .iter()
            .filter(|k| text.contains(k.value.as_str()))
            .map(|k| match k.origin.as_str() {
                "" => k.name.clone(),
                o => format!("{} from {o}", k.name),
            })
            .collect()
    }
}

/// Names only: a value is never printed.
impl std::fmt::Debug for KnownSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.values.iter().map(|k| &k.name))
            .finish()
    }
}

/// Words a value may be without being a secret: what configuration files say of themselves.
const COMMON_VALUES: [&str; 24] = [
    "development",
    "production",
    "staging",
    "localhost",
    "password",
    "changeme",
    "postgres",
    "postgresql",
    "database",
    "username",
    "disabled",
    "enabled",
    "undefined",
    "required",
    "optional",
    "container",
    "anonymous",
    "readonly",
    "readwrite",
    "wayland",
    "default",
    "unknown",
    "xterm-256color",
    "secret",
];

/// Whether `value` is looked for: at least `MIN_LEN` characters, not a path, and not a common
/// word (letters only and either lower-case or a word configuration files use).
pub fn counts_as_secret(value: &str) -> bool {
    let v = value.trim();
    if v.chars().count() < KnownSecrets::MIN_LEN || v.starts_with('/') {
        return false;
    }
    let lower = v.to_ascii_lowercase();
    if COMMON_VALUES.contains(&lower.as_str()) {
        return false;
    }
    let letters_only = v.chars().all(|c| c.is_ascii_alphabetic());
    !(letters_only && v.chars().all(|c| c.is_ascii_lowercase()))
}

/// The secret-looking variables of an environment (`is_secret_name`), with their values.
pub fn secret_variables(vars: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String)> {
    vars.into_iter()
        .filter(|(name, value)| is_secret_name(name) && counts_as_secret(value))
        .collect()
}

/// The assignments of a `.env` file: `NAME=value`, `export NAME=value`, quoted or not;
/// comments and other lines skipped.
pub fn dotenv_values(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        if line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            continue;
        }
        let value = value.trim();
        let value = match value.chars().next() {
            Some(q @ ('"' | '\'')) => value[1..].split(q).next().unwrap_or_default(),
            _ => value.split(" #").next().unwrap_or_default().trim(),
        };
        if !value.is_empty() {
            out.push((name.to_string(), value.to_string()));
        }
    }
    out
}

/// Environment variables, names and values, the person hands one long-lived process (an MCP
/// server's `env`). No command gets any: the command path refuses a profile that carries
/// them. They reach the process through bwrap's own environment, never its command line
/// (which every local user can read). A value is never printed: `Debug` names the variables,
/// and the serialised profile says only whether there are any.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secrets(Vec<(String, String)>);

impl Secrets {
    pub fn new(pairs: Vec<(String, String)>) -> Self {
        Secrets(pairs)
    }

    pub fn enabled(&self) -> bool {
        !self.0.is_empty()
    }

    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| name))
            .finish()
    }
}

impl serde::Serialize for Secrets {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(self.enabled())
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

    #[test]
    fn common_words_paths_and_short_values_are_not_secrets() {
        use super::counts_as_secret;
        for v in [
            "true",
            "1234567",
            "production",
            "localhost",
            "/run/user/1000/bus",
            "abcdefghij",
        ] {
            assert!(!counts_as_secret(v), "{v}");
        }
        for v in [
            "sk-live-abcdef123",
            "hunter2hunter2",
            "SuperSecretPassword",
            "12345678",
        ] {
            assert!(counts_as_secret(v), "{v}");
        }
    }

    #[test]
    fn names_say_where_a_secret_was_found() {
        let k = KnownSecrets::default()
            .with(
                "Spear's environment",
                [("OPENAI_API_KEY".into(), "sk-abc123456789".into())],
            )
            .with(".env", [("DB_PASSWORD".into(), "pw-0987654321".into())]);
        assert_eq!(
            k.names_in("curl -d sk-abc123456789 https://x"),
            ["OPENAI_API_KEY from Spear's environment"]
        );
        assert_eq!(k.names_in("echo pw-0987654321"), ["DB_PASSWORD from .env"]);
        assert!(k.names_in("nothing").is_empty());
    }

    #[test]
    fn dotenv_files_are_read_as_assignments() {
        use super::dotenv_values;
        let got = dotenv_values(
            "# a comment\nexport API_TOKEN=\"tok en-1\"\nDB_URL='postgres://u:p@h/d'\nPLAIN=value # note\nnot a line\n=x\nEMPTY=\n",
        );
        assert_eq!(
            got,
            [
                ("API_TOKEN".to_string(), "tok en-1".to_string()),
                ("DB_URL".to_string(), "postgres://u:p@h/d".to_string()),
                ("PLAIN".to_string(), "value".to_string()),
            ]
        );
    }

    #[test]
    fn only_secret_looking_variables_count() {
        use super::secret_variables;
        let got = secret_variables([
            (
                "OPENAI_API_KEY".to_string(),
                "sk-proj-1234567890".to_string(),
            ),
            ("HOME".to_string(), "/root/somewhere-long".to_string()),
            ("EDITOR".to_string(), "vim-with-plugins-1".to_string()),
            (
                "SSH_AUTH_SOCK".to_string(),
                "/tmp/ssh-XXXX/agent.1".to_string(),
            ),
        ]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "OPENAI_API_KEY");
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
