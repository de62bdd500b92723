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
use super::{awk, env_names, scripts};
use crate::harness::shell::{Word, plain_variable_name};

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
    /// Option lists shared by several entries (`git log` and `git show` both take diff options).
    #[serde(default)]
    pub sets: BTreeMap<String, OptionSet>,
}

/// Options an entry permits, by arity. Nothing else is read-only.
#[derive(Debug, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct OptionSet {
    /// Short options without a value, one character each (`"la1"` is `-l`, `-a`, `-1`).
    pub short_flags: String,
    /// Options without a value, spelled out (`--all`, find's `-print`).
    pub flags: Vec<String>,
    /// Options that take a value: attached (`-n5`, `--lines=5`) or the next word.
    pub with_value: Vec<String>,
    /// Options whose value, if any, is attached (`-i.bak`, `--color=auto`); never the next word.
    pub optional_attached: Vec<String>,
}

/// One allow-listed executable (or a family of names) and the shape of its read-only use.
#[derive(Debug, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Entry {
    pub names: Vec<String>,
    /// The options this entry permits besides those of `sets`, by arity as in [`OptionSet`].
    pub short_flags: String,
    pub flags: Vec<String>,
    pub with_value: Vec<String>,
    pub optional_attached: Vec<String>,
    /// Names of shared option sets this entry permits too.
    pub sets: Vec<String>,
    /// Patterns the value of an option must match (`tar -f` names no remote host).
    pub value_patterns: Option<BTreeMap<String, String>>,
    /// At least one of these options must be present.
    pub require_one_of: Option<Vec<String>>,
    /// ... unless there are exactly this many operands (`git config NAME` reads as `--get`
    /// does; with a value it writes).
    pub or_exactly_operands: Option<usize>,
    /// find-style single-dash options.
    pub single_dash: bool,
    /// Options end at the first operand (bash builtins, POSIX getopt).
    pub options_first: bool,
    /// Every option the program has only reads, so an argument known only at run time cannot
    /// make it do more (`ls "$dir"`, `grep x *.rs`).
    pub dynamic_ok: bool,
    pub max_operands: Option<usize>,
    /// Operands are allowed only when one of these options is given.
    pub operands_require: Vec<String>,
    /// Every operand must match this regex.
    pub operand_pattern: Option<String>,
    /// A script check by name: `sed`, `awk`, `test`, `getopts` or `read`.
    pub check: Option<String>,
    /// The read-only use needs the network.
    pub network: bool,
    /// Options before the subcommand (`git --no-pager`, `git -C dir`).
    pub global_flags: Vec<String>,
    pub global_with_value: Vec<String>,
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

/// An option list, borrowed from an entry or a shared set.
#[derive(Clone, Copy)]
struct Options<'s> {
    short_flags: &'s str,
    flags: &'s [String],
    with_value: &'s [String],
    optional_attached: &'s [String],
}

impl OptionSet {
    fn view(&self) -> Options<'_> {
        Options {
            short_flags: &self.short_flags,
            flags: &self.flags,
            with_value: &self.with_value,
            optional_attached: &self.optional_attached,
        }
    }
}

/// Can a word known only at run time become an option? Not when it starts with a literal
/// character other than `-` and holds no expansion that word splitting could cut into new words
/// (`src/*.rs` expands to paths under `src/`, never to `--pre=x`).
fn may_become_option(w: &Word) -> bool {
    w.dynamic
        && (w.expands
            || !w
                .raw
                .starts_with(|c: char| c.is_ascii_alphanumeric() || "_./~".contains(c)))
}

impl Entry {
    /// Do the operands themselves matter (how many, which)? Then no operand may be unknown.
    fn constrains_operands(&self) -> bool {
        self.max_operands.is_some()
            || !self.operands_require.is_empty()
            || self.operand_pattern.is_some()
            || self.check.is_some()
    }

    /// This entry's own options and those of its sets.
    fn option_sets<'s>(&'s self, sets: &'s BTreeMap<String, OptionSet>) -> Vec<Options<'s>> {
        let own = Options {
            short_flags: &self.short_flags,
            flags: &self.flags,
            with_value: &self.with_value,
            optional_attached: &self.optional_attached,
        };
        std::iter::once(own)
            .chain(
                self.sets
                    .iter()
                    .filter_map(|n| sets.get(n))
                    .map(OptionSet::view),
            )
            .collect()
    }

    /// Is the option `name`, as parsed, one this entry permits? Long options must be spelled in
    /// full: getopt_long would take an abbreviation for whichever option it abbreviates, listed
    /// or not (`--fo` is `--follow`).
    fn permits(option_sets: &[Options], required: &[String], name: &str) -> bool {
        let short = name.len() == 2 && !name.starts_with("--");
        option_sets.iter().any(|o| {
            (short && name[1..].chars().all(|c| o.short_flags.contains(c)))
                || o.flags
                    .iter()
                    .chain(o.with_value)
                    .chain(o.optional_attached)
                    .any(|f| f == name)
        }) || required.iter().any(|r| r == name)
    }

    /// Does `name args` match this entry's read-only shape?
    fn matches(
        &self,
        name: &str,
        args: &[Word],
        sets: &BTreeMap<String, OptionSet>,
    ) -> Result<(), Mismatch> {
        if let Some(subs) = &self.subcommands {
            return self.match_subcommand(name, subs, args, sets);
        }
        let option_sets = self.option_sets(sets);
        let with_value: Vec<&str> = option_sets
            .iter()
            .flat_map(|o| o.with_value.iter().map(String::as_str))
            .collect();
        let optional: Vec<&str> = option_sets
            .iter()
            .flat_map(|o| o.optional_attached.iter().map(String::as_str))
            .collect();
        let syntax = OptionSyntax {
            with_value: &with_value,
            optional_attached: &optional,
            single_dash: self.single_dash,
            options_first: self.options_first,
        };
        let parsed = options::parse(args, syntax);
        let options_end = parsed.options_end.unwrap_or(args.len());
        if !self.dynamic_ok
            && let Some(d) = args.iter().enumerate().find_map(|(i, a)| {
                let unsafe_word = (i < options_end && may_become_option(a))
                    || (a.dynamic && self.constrains_operands());
                unsafe_word.then_some(a)
            })
        {
            return Err(format!(
                "`{name}` has an argument known only at run time (`{}`), which could turn into an option that is not read-only",
                d.raw
            ));
        }
        self.check_options(name, &parsed, &option_sets)?;
        if let Some(check) = &self.check {
            run_check(check, name, args, &parsed)?;
        }
        Ok(())
    }

    fn check_options(
        &self,
        name: &str,
        parsed: &Parsed,
        option_sets: &[Options],
    ) -> Result<(), Mismatch> {
        let required = self.require_one_of.as_deref().unwrap_or(&[]);
        for opt in &parsed.options {
            if !Self::permits(option_sets, required, &opt.name) {
                return Err(format!(
                    "`{name} {}` is outside the read-only options of `{name}`",
                    opt.name
                ));
            }
            if let Some(pattern) = self.value_patterns.as_ref().and_then(|p| p.get(&opt.name)) {
                let value = opt.value.as_deref().unwrap_or("");
                if !pattern_matches(name, pattern, value)? {
                    return Err(format!(
                        "`{name} {} {value}` is outside the read-only form of `{name}`",
                        opt.name
                    ));
                }
            }
        }
        if let Some(req) = &self.require_one_of
            && !req
                .iter()
                .any(|r| parsed.options.iter().any(|o| &o.name == r))
            && self.or_exactly_operands != Some(parsed.operands.len())
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
            for o in &parsed.operands {
                if !pattern_matches(name, pattern, &o.value)? {
                    return Err(format!(
                        "`{name} {}` is outside the read-only form of `{name}`",
                        o.value
                    ));
                }
            }
        }
        Ok(())
    }

    fn match_subcommand(
        &self,
        name: &str,
        subs: &BTreeMap<String, Entry>,
        args: &[Word],
        sets: &BTreeMap<String, OptionSet>,
    ) -> Result<(), Mismatch> {
        let mut i = 0;
        while i < args.len() {
            let word = &args[i];
            let v = word.value.as_str();
            if word.dynamic {
                return Err(format!(
                    "`{name}` has an argument known only at run time (`{}`) where its subcommand or options go",
                    word.raw
                ));
            }
            if !v.starts_with('-') {
                break;
            }
            let (opt, attached) = match v.split_once('=') {
                Some((n, _)) if n.starts_with("--") => (n, true),
                _ => (v, false),
            };
            if self.global_with_value.iter().any(|g| g == opt) {
                i += if attached { 1 } else { 2 };
            } else if self.global_flags.iter().any(|g| g == v) {
                i += 1;
            } else {
                return Err(format!(
                    "`{name} {v}` is outside the read-only options of `{name}`, and can make it read another configuration or run other programs"
                ));
            }
        }
        if let Some(d) = args.get(i).filter(|a| a.dynamic) {
            return Err(format!(
                "`{name}` has a subcommand known only at run time (`{}`)",
                d.raw
            ));
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
        entry.matches(&format!("{name} {}", sub.value), &args[i + 1..], sets)
    }
}

/// Does `value` match `pattern`? A pattern written `!RE` matches what RE does not.
fn pattern_matches(name: &str, pattern: &str, value: &str) -> Result<bool, Mismatch> {
    let (negated, pattern) = match pattern.strip_prefix('!') {
        Some(p) => (true, p),
        None => (false, pattern),
    };
    let re = Regex::new(pattern)
        .map_err(|e| format!("the allow-list pattern for `{name}` is invalid: {e}"))?;
    Ok(re.is_match(value) != negated)
}

fn run_check(check: &str, name: &str, args: &[Word], parsed: &Parsed) -> Result<(), Mismatch> {
    match check {
        "test" => test_operands(name, args),
        "getopts" => match parsed.operands.get(1) {
            Some(var)
                if env_names::harmless_shell_variable(&var.value)
                    && plain_variable_name(&var.value)
                    && var.is_static() =>
            {
                Ok(())
            }
            Some(var) => Err(format!(
                "`getopts` assigns `{}`, which can change what programs run",
                var.raw
            )),
            None => Err("`getopts` without a variable name".to_string()),
        },
        // `read NAME…` assigns each name: `read histchars` would change what bash expands.
        "read" => match parsed
            .operands
            .iter()
            .find(|v| !v.is_static() || !env_names::harmless_shell_variable(&v.value))
        {
            Some(var) => Err(format!(
                "`{name}` assigns `{}`, which can change what programs run or what bash expands",
                var.raw
            )),
            None => Ok(()),
        },
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
        // Every program any dialect runs, and nothing on the command line but data.
        "awk" => {
            let call = awk::Invocation::read(args);
            if !call.findings.is_empty() {
                return Err(format!(
                    "`{name}` is given options or files that do more than read"
                ));
            }
            if call.programs.is_empty() {
                return Err(format!("`{name}` without a program text"));
            }
            match call
                .programs
                .iter()
                .find(|p| !awk::program(p).prints_only())
            {
                Some(_) => Err(format!("the `{name}` program is not read-only")),
                None => Ok(()),
            }
        }
        other => Err(format!("unknown allow-list check `{other}`")),
    }
}

/// `test`'s binary operators.
const TEST_BINARY: &[&str] = &[
    "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-ef", "-nt", "-ot", "-a",
    "-o",
];

/// The words of a `test` or `[`: `-v NAME` and `-R NAME` evaluate an array subscript in NAME,
/// which runs what it substitutes (`test -v 'a[$(cmd)]'`), so NAME must be a plain name with at
/// most a number for subscript. A value known only at run time is read-only only where it can
/// be nothing but an operand: quoted (no splitting), beside an operator that makes it one, or
/// the only word.
fn test_operands(name: &str, args: &[Word]) -> Result<(), Mismatch> {
    let words = match args.split_last() {
        Some((last, rest)) if name == "[" && last.value == "]" && last.is_static() => rest,
        _ => args,
    };
    let operator = |i: usize, ops: &dyn Fn(&str) -> bool| {
        words
            .get(i)
            .is_some_and(|w| w.is_static() && ops(w.value.as_str()))
    };
    let binary = |v: &str| TEST_BINARY.contains(&v);
    let unary = |v: &str| v.len() == 2 && v.starts_with('-') && v != "-v" && v != "-R";
    for (i, w) in words.iter().enumerate() {
        if w.is_static() && (w.value == "-v" || w.value == "-R") {
            let target = words.get(i + 1);
            if !target.is_some_and(|t| t.is_static() && plain_variable_name(&t.value)) {
                return Err(format!(
                    "`{name} {}` evaluates the array subscript in `{}`, which can run commands",
                    w.value,
                    target.map_or("", |t| t.raw.as_str())
                ));
            }
        }
        if w.dynamic {
            let quoted = w.raw.starts_with('"') && w.raw.ends_with('"') && w.raw.len() > 1;
            let alone = words.len() == 1 || (words.len() == 2 && i == 1 && words[0].value == "!");
            let operand = alone
                || (i > 0 && operator(i - 1, &|v| binary(v) || unary(v)))
                || operator(i + 1, &binary);
            if !(quoted && operand) {
                return Err(format!(
                    "`{name}` has `{}`, known only at run time, where it could become an operator such as `-v`",
                    w.raw
                ));
            }
        }
    }
    Ok(())
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
            serde_json::Value::String(s) => !s.is_empty(),
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
    out.push_str("],\n\"sets\": {\n");
    for (i, (name, set)) in list.sets.iter().enumerate() {
        let mut v = serde_json::to_value(set).map_err(|e| e.to_string())?;
        drop_defaults(&mut v);
        let key = serde_json::to_string(name).map_err(|e| e.to_string())?;
        let line = serde_json::to_string(&v).map_err(|e| e.to_string())?;
        out.push_str(&format!("{key}:{line}"));
        out.push_str(if i + 1 < list.sets.len() { ",\n" } else { "\n" });
    }
    out.push_str("}}\n");
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
        match e.matches(name, args, &list.sets) {
            Ok(()) => return Some(Ok(e.network)),
            Err(why) => {
                first_err.get_or_insert(why);
            }
        }
    }
    first_err.map(Err)
}
