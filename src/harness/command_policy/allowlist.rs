//! The read-only allow-list, kept as data in `assets/policy/read_only.toml`. Each entry names
//! executables and the option shapes under which they only read, with examples that must and
//! must not match (checked by a test). A command matches an entry or it is not read-only.
//!
//! The TOML is what people edit and review. What Spear loads is its JSON twin,
//! `assets/policy/read_only.json` (`cargo run --example allowlist_json`), because parsing the
//! TOML cost a third of a `spear exec` process's own instructions; a test holds the two equal.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::options::{self, OptionSyntax, Parsed};
use super::scripts;
use crate::harness::shell::Word;

/// The source of truth, for the test that holds the JSON equal to it and for the generator.
pub const TOML_SOURCE: &str = include_str!("../../../assets/policy/read_only.toml");
/// What is loaded.
const JSON_DATA: &str = include_str!("../../../assets/policy/read_only.json");

/// The allow-list file.
#[derive(Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AllowList {
    #[serde(rename = "command")]
    pub commands: Vec<Entry>,
}

/// One allow-listed executable (or a family of names) and the shape of its read-only use.
#[derive(Debug, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Entry {
    pub names: Vec<String>,
    /// Options that make it something else (matched in clusters and by abbreviation).
    pub forbid: Vec<String>,
    /// When present, the only options allowed.
    pub allow: Option<Vec<String>>,
    /// At least one of these options must be present.
    pub require_one_of: Option<Vec<String>>,
    pub with_value: Vec<String>,
    pub optional_attached: Vec<String>,
    /// find-style single-dash options.
    pub single_dash: bool,
    pub max_operands: Option<usize>,
    /// Operands are allowed only when one of these options is given.
    pub operands_require: Vec<String>,
    /// Every operand must match this regex.
    pub operand_pattern: Option<String>,
    /// A script check by name: `sed` or `awk`.
    pub check: Option<String>,
    /// The read-only use needs the network.
    pub network: bool,
    /// Options before the subcommand that take a value (`git -C dir`).
    pub global_with_value: Vec<String>,
    pub global_forbid: Vec<String>,
    pub subcommands: Option<BTreeMap<String, Entry>>,
    /// A bare invocation (no subcommand) is read-only.
    pub bare_ok: bool,
    /// Examples that must be READ_ONLY as whole commands.
    pub ok: Vec<String>,
    /// Examples that must not be READ_ONLY.
    pub not: Vec<String>,
}

/// Why a command is not on the allow-list, as a sentence fragment.
pub type Mismatch = String;

impl Entry {
    fn restricted(&self) -> bool {
        !self.forbid.is_empty()
            || self.allow.is_some()
            || self.require_one_of.is_some()
            || self.max_operands.is_some()
            || !self.operands_require.is_empty()
            || self.operand_pattern.is_some()
            || self.check.is_some()
            || self.subcommands.is_some()
    }

    /// An option named exactly as one this entry lists is that option, not an abbreviation of a
    /// forbidden one (getopt_long prefers the exact match: `--list` is not `--listed-incremental`).
    fn knows_exactly(&self, given: &str) -> bool {
        let given = given.split('=').next().unwrap_or(given);
        self.with_value
            .iter()
            .chain(self.require_one_of.iter().flatten())
            .chain(self.allow.iter().flatten())
            .any(|k| k == given)
    }

    /// Does `name args` match this entry's read-only shape?
    fn matches(&self, name: &str, args: &[Word]) -> Result<(), Mismatch> {
        if self.restricted()
            && let Some(d) = args.iter().find(|a| a.dynamic)
        {
            return Err(format!(
                "`{name}` has an argument known only at run time (`{}`), which could turn into an option that is not read-only",
                d.raw
            ));
        }
        if let Some(subs) = &self.subcommands {
            return self.match_subcommand(name, subs, args);
        }
        let with_value: Vec<&str> = self.with_value.iter().map(String::as_str).collect();
        let optional: Vec<&str> = self.optional_attached.iter().map(String::as_str).collect();
        let syntax = OptionSyntax {
            with_value: &with_value,
            optional_attached: &optional,
            single_dash: self.single_dash,
        };
        let parsed = options::parse(args, syntax);
        self.check_options(name, &parsed)?;
        if let Some(check) = &self.check {
            run_check(check, name, &parsed)?;
        }
        Ok(())
    }

    fn check_options(&self, name: &str, parsed: &Parsed) -> Result<(), Mismatch> {
        for opt in &parsed.options {
            if let Some(f) = self.forbid.iter().find(|f| {
                opt.name == **f
                    || (!self.knows_exactly(&opt.name) && options::option_matches(&opt.name, f))
            }) {
                return Err(format!(
                    "`{name} {}` is not read-only (`{f}` is excluded)",
                    opt.name
                ));
            }
            if let Some(allow) = &self.allow
                && !allow.iter().any(|a| options::option_matches(&opt.name, a))
            {
                return Err(format!(
                    "`{name} {}` is outside the read-only options of `{name}`",
                    opt.name
                ));
            }
        }
        if let Some(req) = &self.require_one_of
            && !req.iter().any(|r| parsed.has(r))
        {
            return Err(format!(
                "`{name}` is read-only only with one of {}",
                req.join(", ")
            ));
        }
        if let Some(max) = self.max_operands
            && parsed.operands.len() > max
        {
            return Err(format!(
                "`{name}` with more than {max} operand(s) can write its last operand"
            ));
        }
        if !self.operands_require.is_empty()
            && !parsed.operands.is_empty()
            && !self.operands_require.iter().any(|r| parsed.has(r))
        {
            return Err(format!(
                "`{name} {}` is not read-only without one of {}",
                parsed.operands[0].value,
                self.operands_require.join(", ")
            ));
        }
        if let Some(pattern) = &self.operand_pattern {
            let re = Regex::new(pattern)
                .map_err(|e| format!("the allow-list pattern for `{name}` is invalid: {e}"))?;
            if let Some(bad) = parsed.operands.iter().find(|o| !re.is_match(&o.value)) {
                return Err(format!(
                    "`{name} {}` is outside the read-only form of `{name}`",
                    bad.value
                ));
            }
        }
        Ok(())
    }

    fn match_subcommand(
        &self,
        name: &str,
        subs: &BTreeMap<String, Entry>,
        args: &[Word],
    ) -> Result<(), Mismatch> {
        let mut i = 0;
        while i < args.len() {
            let v = args[i].value.as_str();
            if !v.starts_with('-') {
                break;
            }
            if let Some(f) = self.global_forbid.iter().find(|f| {
                let opt = v.split_once('=').map(|(n, _)| n).unwrap_or(v);
                options::option_matches(opt, f)
                    || (!f.starts_with("--") && v.starts_with(f.as_str()) && f.len() == 2)
            }) {
                return Err(format!(
                    "`{name} {v}` can make `{name}` run other programs (`{f}` is excluded)"
                ));
            }
            let takes = self.global_with_value.iter().any(|g| g == v);
            i += if takes { 2 } else { 1 };
        }
        let Some(sub) = args.get(i) else {
            return if self.bare_ok {
                Ok(())
            } else {
                Err(format!(
                    "`{name}` without a subcommand is not on the read-only allow-list"
                ))
            };
        };
        let Some(entry) = subs.get(sub.value.as_str()) else {
            return Err(format!(
                "`{name} {}` is not on the read-only allow-list",
                sub.value
            ));
        };
        let full = format!("{name} {}", sub.value);
        entry.matches(&full, &args[i + 1..]).and_then(|()| {
            let parsed = options::parse(&args[i + 1..], OptionSyntax::GNU);
            self.check_options(&full, &parsed)
        })
    }
}

fn run_check(check: &str, name: &str, parsed: &Parsed) -> Result<(), Mismatch> {
    match check {
        "sed" => {
            let scripts: Vec<String> = sed_scripts(parsed);
            for s in scripts {
                let facts = scripts::sed_script(&s);
                if !facts.print_only() {
                    return Err(format!("`{name}` script `{s}` is not print-only"));
                }
            }
            Ok(())
        }
        "awk" => {
            let program = parsed
                .values_of("-e")
                .chain(parsed.values_of("--source"))
                .map(str::to_string)
                .next()
                .or_else(|| parsed.operands.first().map(|w| w.value.clone()));
            let Some(program) = program else {
                return Err(format!("`{name}` without a program text"));
            };
            let facts = scripts::awk_program(&program);
            if facts.read_only() {
                Ok(())
            } else {
                Err(format!("`{name}` program runs commands or writes files"))
            }
        }
        other => Err(format!("unknown allow-list check `{other}`")),
    }
}

/// The scripts of a sed invocation: `-e`/`--expression` values, else the first operand.
pub(crate) fn sed_scripts(parsed: &Parsed) -> Vec<String> {
    let mut v: Vec<String> = parsed
        .values_of("-e")
        .chain(parsed.values_of("--expression"))
        .map(str::to_string)
        .collect();
    if v.is_empty()
        && let Some(first) = parsed.operands.first()
    {
        v.push(first.value.clone());
    }
    v
}

/// The parsed allow-list, or the reason it could not be read (every command is then not
/// read-only, which is the safe failure).
pub fn allow_list() -> Result<&'static AllowList, &'static str> {
    static LIST: OnceLock<Result<AllowList, String>> = OnceLock::new();
    LIST.get_or_init(|| serde_json::from_str::<AllowList>(JSON_DATA).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(String::as_str)
}

/// Leave out what deserializing fills in anyway (null, false, an empty list), so the JSON stays
/// as short as the TOML. `allow` and `require_one_of` keep an empty list: there it means "none".
fn drop_defaults(v: &mut serde_json::Value) {
    if let serde_json::Value::Object(map) = v {
        map.retain(|key, value| match value {
            serde_json::Value::Null | serde_json::Value::Bool(false) => false,
            serde_json::Value::Array(a) => {
                !a.is_empty() || key == "allow" || key == "require_one_of"
            }
            _ => true,
        });
        for value in map.values_mut() {
            drop_defaults(value);
        }
    }
}

/// The allow-list as the TOML source says it.
pub fn from_toml(text: &str) -> Result<AllowList, String> {
    toml::from_str::<AllowList>(text).map_err(|e| e.to_string())
}

/// The JSON twin of an allow-list: one entry a line, so its diffs read like the TOML's.
pub fn to_json(list: &AllowList) -> Result<String, String> {
    let mut out = String::from("{\"command\": [\n");
    for (i, e) in list.commands.iter().enumerate() {
        let mut v = serde_json::to_value(e).map_err(|e| e.to_string())?;
        drop_defaults(&mut v);
        let line = serde_json::to_string(&v).map_err(|e| e.to_string())?;
        out.push_str(&line);
        out.push_str(if i + 1 < list.commands.len() {
            ",\n"
        } else {
            "\n"
        });
    }
    out.push_str("]}\n");
    Ok(out)
}

/// The verdict for one command: `Ok(network)` when it is allow-listed read-only work,
/// `Err(reason)` when the executable is listed but this use is not, `None` when it is not listed.
pub fn lookup(name: &str, args: &[Word]) -> Option<Result<bool, Mismatch>> {
    let list = match allow_list() {
        Ok(l) => l,
        Err(e) => {
            return Some(Err(format!(
                "the read-only allow-list could not be loaded ({e})"
            )));
        }
    };
    let entries: Vec<&Entry> = list
        .commands
        .iter()
        .filter(|e| e.names.iter().any(|n| n == name))
        .collect();
    if entries.is_empty() {
        return None;
    }
    let mut first_err = None;
    for e in entries {
        match e.matches(name, args) {
            Ok(()) => return Some(Ok(e.network)),
            Err(why) => {
                first_err.get_or_insert(why);
            }
        }
    }
    first_err.map(Err)
}
