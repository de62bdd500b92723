//! The download rules: a fetcher (`curl`, `wget`) saving what it fetches is a write to the
//! files it names (or to a name the server chooses), and remote code run is DANGEROUS whether
//! it is piped into an interpreter, substituted into one, kept in a variable and run, or saved
//! to a file that a later command of the line runs.

use std::collections::HashMap;

use super::allowlist;
use super::assessment::CommandClass::{Dangerous, ShellComplex, WorkspaceMutating};
use super::classify::{Cx, WriteKind};
use super::invocations;
use super::options::{self, OptionSyntax};
use super::tables::{self, base_name};
use super::wrappers;
use crate::harness::shell::{ShellFacts, SimpleCommand, Word};

/// GNU make options that take a value.
const MAKE_VALUES: &[&str] = &[
    "-f",
    "--file",
    "--makefile",
    "-C",
    "--directory",
    "-I",
    "--include-dir",
    "-j",
    "--jobs",
    "-l",
    "--load-average",
    "-o",
    "--old-file",
    "-W",
    "--what-if",
    "--new-file",
    "--assume-new",
];

/// A fetcher's output-file options and its parsed arguments.
fn parse_download<'a>(
    key: &str,
    args: &'a [Word],
) -> (&'static [&'static str], options::Parsed<'a>) {
    let (outputs, others) = if key == "curl" {
        (tables::CURL_OUTPUT_FILES, tables::CURL_VALUES)
    } else {
        (tables::WGET_OUTPUT_FILES, tables::WGET_VALUES)
    };
    let with_value: Vec<&str> = outputs.iter().chain(others).copied().collect();
    (
        outputs,
        options::parse(args, OptionSyntax::gnu(&with_value)),
    )
}

/// The files a `curl`/`wget` call saves what it downloads to, as named (`-o f`, `-O f`).
pub(crate) fn downloaded_files(key: &str, args: &[Word]) -> Vec<String> {
    let (outputs, parsed) = parse_download(key, args);
    parsed
        .options
        .iter()
        .filter(|opt| {
            outputs
                .iter()
                .any(|o| options::option_matches(&opt.name, o))
        })
        .filter_map(|opt| opt.value.clone())
        .filter(|v| v != "-")
        .collect()
}

/// curl's arguments without the options that only say where it saves (`-o F`, `-O`,
/// `--output-dir D`), to judge the rest against the allow-list.
fn without_outputs(outputs: &[&str], parsed: &options::Parsed) -> Vec<Word> {
    const SAVING: &[&str] = &[
        "-O",
        "--remote-name",
        "--remote-name-all",
        "-J",
        "--remote-header-name",
        "--create-dirs",
        "--output-dir",
    ];
    let mut rest = Vec::new();
    for opt in &parsed.options {
        if outputs
            .iter()
            .chain(SAVING)
            .any(|o| options::option_matches(&opt.name, o))
        {
            continue;
        }
        rest.push(Word::literal(&opt.name));
        rest.extend(opt.value.as_deref().map(Word::literal));
    }
    rest.push(Word::literal("--"));
    rest.extend(parsed.operands.iter().map(|w| (*w).clone()));
    rest
}

impl<'c> Cx<'c> {
    /// Variables holding downloaded text: `x=$(curl …); eval "$x"`.
    pub(super) fn tainted_vars(&self) -> Vec<&'c str> {
        let f: &'c ShellFacts = self.facts;
        f.assignments
            .iter()
            .chain(f.commands.iter().flat_map(|c| c.assignments.iter()))
            .chain(f.declarations.iter().flat_map(|d| d.assignments.iter()))
            .filter(|a| {
                a.value
                    .as_ref()
                    .is_some_and(|v| v.substitutions.iter().any(|i| is_fetcher(&f.commands[*i])))
            })
            .map(|a| a.name.as_str())
            .collect()
    }

    pub(super) fn download(&mut self, key: &str, args: &[Word]) {
        let (outputs, parsed) = parse_download(key, args);
        let mut wrote = false;
        for opt in &parsed.options {
            if let Some(o) = outputs
                .iter()
                .find(|o| options::option_matches(&opt.name, o))
                && let Some(v) = &opt.value
                && v != "-"
            {
                self.write_target(&Word::literal(v), &format!("`{key} {o}`"), WriteKind::Plain);
                wrote = true;
            }
        }
        if key == "curl" && (parsed.has("-K") || parsed.has("--config")) {
            self.raise(
                ShellComplex,
                "`curl -K` reads options, including output files, from a config file",
            );
        }
        let names_remote = parsed.has("-O")
            || parsed.has("--remote-name")
            || parsed.has("--remote-name-all")
            || parsed.has("-J");
        if (key == "curl" && names_remote)
            || (key == "wget"
                && !wrote
                && parsed.value_of("-O") != Some("-")
                && parsed.value_of("--output-document") != Some("-"))
        {
            self.raise(
                WorkspaceMutating,
                format!("`{key}` saves what it downloads under a name the server chooses"),
            );
        }
        if !wrote && key == "curl" && !names_remote {
            self.raise(
                ShellComplex,
                format!("`{key}` is used with options outside its read-only form"),
            );
        } else if key == "curl"
            && let Some(Err(why)) = allowlist::lookup(key, &without_outputs(outputs, &parsed))
        {
            // Saving what it fetches is a write; uploading (`-T`), posting a file (`-d @f`) or
            // reaching a local socket besides is more than that.
            self.raise(ShellComplex, why);
        }
    }

    /// Remote code piped into an interpreter: `curl … | sh`. One pass a pipeline: a stage that
    /// reads a program, after any stage that downloads (a 14,000-stage pipeline once took
    /// seconds when every pair was compared).
    pub(super) fn piped_downloads(&mut self) {
        let f = self.facts;
        let reads_program = |c: &SimpleCommand| invocations::stdin_program(&c.name, &c.args);
        for stages in &f.pipelines {
            let mut fetcher: Option<&SimpleCommand> = None;
            for stage in stages {
                let commands = &f.commands[stage.clone()];
                if let Some(fetched) = fetcher
                    && let Some(runner) = commands.iter().find(|c| reads_program(c).is_some())
                {
                    self.raise(
                        Dangerous,
                        format!(
                            "pipes what `{}` downloads into `{}`, running remote code",
                            fetched.name.value, runner.name.value
                        ),
                    );
                }
                if fetcher.is_none() {
                    fetcher = commands.iter().find(|c| is_fetcher(c));
                }
            }
        }
    }

    /// Remote code substituted into an interpreter (`bash <(curl …)`, `eval "$(wget …)"`), or
    /// run from a variable holding downloaded text (`tainted`): `c` as run through its
    /// wrappers, `key args`.
    pub(super) fn runs_downloaded(
        &mut self,
        c: &SimpleCommand,
        key: &str,
        args: &[Word],
        tainted: &[&str],
    ) {
        let f = self.facts;
        let runs_code = tables::SHELLS.contains(&key)
            || tables::interpreter(key).is_some()
            || ["eval", "source", ".", "trap"].contains(&key);
        if !runs_code {
            return;
        }
        let words = || {
            args.iter()
                .chain(c.redirects.iter().filter_map(|r| r.target.as_ref()))
        };
        for w in words() {
            if let Some(fetcher) = w
                .substitutions
                .iter()
                .map(|i| &f.commands[*i])
                .find(|x| is_fetcher(x))
            {
                self.raise(
                    Dangerous,
                    format!("`{key}` runs code that `{}` downloads", fetcher.name.value),
                );
            }
        }
        for w in words() {
            if let Some(var) = tainted
                .iter()
                .find(|v| w.raw.contains(&format!("${v}")) || w.raw.contains(&format!("${{{v}")))
            {
                self.raise(
                    Dangerous,
                    format!("`{key}` runs `${var}`, which holds downloaded text"),
                );
            }
        }
    }

    /// A file a fetcher saved, then run: `curl -o i.sh URL && sh i.sh`, `wget -O x URL; ./x`,
    /// `curl URL > i.sh; . i.sh`, `curl URL | tee i.sh; bash i.sh`. As dangerous as the pipe.
    pub(super) fn downloaded_then_run(&mut self) {
        let f = self.facts;
        let plain = |v: &str| {
            let mut v = v;
            while let Some(rest) = v.strip_prefix("./") {
                v = rest;
            }
            v.to_string()
        };
        // Each file saved, with the fetcher that saved it.
        let mut saved: HashMap<String, String> = Default::default();
        let mut first_fetcher: Option<String> = None;
        for c in &f.commands {
            let (name, args) = wrappers::innermost(&c.name, &c.args);
            if name.dynamic || !tables::FETCHERS.contains(&base_name(&name.value)) {
                continue;
            }
            let key = base_name(&name.value).to_string();
            first_fetcher.get_or_insert_with(|| key.clone());
            let files = downloaded_files(&key, args).into_iter().chain(
                c.redirects
                    .iter()
                    .filter(|r| r.kind.writes() && r.fd.as_deref().is_none_or(|fd| fd == "1"))
                    .filter_map(|r| r.target.as_ref())
                    .filter(|t| t.is_static())
                    .map(|t| t.value.clone()),
            );
            for file in files {
                saved.entry(plain(&file)).or_insert_with(|| key.clone());
            }
        }
        // `curl URL | tee f`: what tee saves after a download in the same pipeline.
        for stages in &f.pipelines {
            let mut fetcher: Option<String> = None;
            for stage in stages {
                for t in &f.commands[stage.clone()] {
                    let (name, args) = wrappers::innermost(&t.name, &t.args);
                    if name.dynamic {
                        continue;
                    }
                    let key = base_name(&name.value);
                    if let Some(fetched) = &fetcher
                        && key == "tee"
                    {
                        for a in args
                            .iter()
                            .filter(|a| a.is_static() && !a.value.starts_with('-'))
                        {
                            saved
                                .entry(plain(&a.value))
                                .or_insert_with(|| fetched.clone());
                        }
                    }
                    if fetcher.is_none() && tables::FETCHERS.contains(&key) {
                        fetcher = Some(key.to_string());
                    }
                }
            }
        }
        // The grammar hangs `a && curl URL > f` on the list, not on `curl`: with a fetcher in the
        // line, a file a statement-level redirection writes may be the download.
        if let Some(fetcher) = first_fetcher {
            for t in f
                .statement_redirects
                .iter()
                .filter(|r| r.kind.writes())
                .filter_map(|r| r.target.as_ref())
                .filter(|t| t.is_static())
            {
                saved
                    .entry(plain(&t.value))
                    .or_insert_with(|| fetcher.clone());
            }
        }
        if saved.is_empty() {
            return;
        }
        for c in &f.commands {
            let (name, args) = wrappers::innermost(&c.name, &c.args);
            if name.dynamic {
                continue;
            }
            let key = base_name(&name.value);
            // The script file each runs, not its other operands (`python3 x.py data.json`).
            let mut run: Vec<&str> = vec![name.value.as_str()];
            if tables::SHELLS.contains(&key) {
                let shell = invocations::ShellArgs::parse(args);
                run.extend(
                    shell
                        .script
                        .filter(|_| shell.command.is_none())
                        .map(|w| w.value.as_str()),
                );
            } else if let Some(flags) = tables::interpreter(key) {
                let code = invocations::Interp::parse(key, flags, args);
                if code.inline.is_empty() && code.module.is_none() {
                    run.extend(code.operands.first().map(|w| w.value.as_str()));
                }
            } else if ["source", "."].contains(&key) {
                run.extend(args.first().map(|w| w.value.as_str()));
            }
            // A makefile is a program too: `make -f FILE`, `--file=FILE`, `-fFILE`.
            let makefiles = ["make", "gmake"]
                .contains(&key)
                .then(|| options::parse(args, OptionSyntax::gnu(MAKE_VALUES)));
            if let Some(parsed) = &makefiles {
                run.extend(
                    ["-f", "--file", "--makefile"]
                        .iter()
                        .flat_map(|o| parsed.values_of(o)),
                );
            }
            for value in run {
                let file = plain(value);
                if let Some(fetcher) = saved.get(&file) {
                    self.raise(
                        Dangerous,
                        format!(
                            "`{}` runs `{file}`, which `{fetcher}` downloaded",
                            name.value
                        ),
                    );
                    break;
                }
            }
        }
    }
}

/// A command that downloads, also behind wrappers (`nice curl …`, `time wget …`).
fn is_fetcher(c: &SimpleCommand) -> bool {
    let (name, _) = wrappers::innermost(&c.name, &c.args);
    !name.dynamic && tables::FETCHERS.contains(&base_name(&name.value))
}
