//! The differential test against real bash (CRATES.md): thousands of generated scripts of unique
//! non-existent command names, placed in every construct the classifier must walk, are run by
//! bash, whose `command_not_found_handle` logs every name it really tried to run. The classifier
//! must have seen each of them. The scripts run nothing but bash builtins, nested `bash -c` and
//! names that do not exist, each in its own scratch directory, in batches with a timeout, and in a
//! network namespace of their own when `unshare -rn` works here.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;
use std::io::Read;
use std::ops::Range;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use spear::harness::command_policy::{CommandClass, CommandPolicy};
use spear::harness::shell;

const BASH: &str = "/bin/bash";
const SCRIPTS: usize = 3000;
const BATCH: usize = 200;
const SEED: u64 = 0x5bea_2026_d1ff_0001;
/// How deep substitutions and compound commands nest.
const MAX_DEPTH: usize = 3;
/// Past this many names a script stops adding nested constructs.
const NAME_BUDGET: usize = 6;
const HEREDOC_PERCENT: usize = 3;
const BASH_C_PERCENT: usize = 8;
const BATCH_TIMEOUT: Duration = Duration::from_secs(90);

/// Constructs every run must have generated (in at least 15 scripts each).
#[rustfmt::skip]
const FEATURES: &[&str] = &[
    "pipeline", "pipe_stderr", "and", "or", "semicolon", "background", "newline", "negation",
    "subshell", "group", "if", "elif", "else", "for", "for_subst", "for_arith", "while",
    "while_not", "until", "case", "case_subst", "function", "function_keyword",
    "function_subshell", "cmdsub", "cmdsub_quoted", "cmdsub_concat", "backtick", "procsub_in",
    "procsub_out", "procsub_redirect", "param_default", "arith_subst", "arith_command",
    "test_double", "test_single", "assignment", "export_assignment", "declare_assignment",
    "array_assignment", "leading_assignment", "redirect_file", "redirect_subst", "herestring",
    "bash_c", "heredoc_unquoted", "heredoc_command", "heredoc_sameline", "heredoc_or",
    "heredoc_dash", "heredoc_quoted", "heredoc_pipe", "heredoc_group", "quote_empty",
    "quote_double", "quote_backslash", "quote_concat",
];

/// xorshift64*: tiny and deterministic.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn percent(&mut self, p: usize) -> bool {
        self.below(100) < p
    }
}

/// One generated script: its text, every name it contains (with the construct it sits in
/// directly), and the constructs used.
struct Script {
    text: String,
    names: Vec<(String, &'static str)>,
    features: BTreeSet<&'static str>,
}

struct Gen {
    rng: Rng,
    index: usize,
    next: usize,
    names: Vec<(String, &'static str)>,
    features: BTreeSet<&'static str>,
    in_backtick: bool,
    in_bash_c: bool,
    /// Inside `$(( … ))` or `(( … ))`, where bash reads a `case` as something else (see
    /// `case_stmt`).
    in_arith: bool,
}

impl Gen {
    fn script(index: usize) -> Script {
        let seed = SEED ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut g = Gen {
            rng: Rng::new(seed),
            index,
            next: 0,
            names: Vec::new(),
            features: BTreeSet::new(),
            in_backtick: false,
            in_bash_c: false,
            in_arith: false,
        };
        for _ in 0..8 {
            g.rng.next();
        }
        let mut text = g.top(0);
        text.push('\n');
        Script {
            text,
            names: g.names,
            features: g.features,
        }
    }

    fn feat(&mut self, feature: &'static str) {
        self.features.insert(feature);
    }

    fn fresh(&mut self) -> usize {
        self.next += 1;
        self.next
    }

    fn spent(&self) -> bool {
        self.names.len() >= NAME_BUDGET
    }

    /// A new non-existent command name, possibly written with a quoting trick.
    fn name(&mut self, tag: &'static str) -> String {
        let k = self.fresh();
        let plain = format!("zqx_{}_{k}", self.index);
        self.names.push((plain.clone(), tag));
        match self.rng.below(12) {
            0 => {
                self.feat("quote_empty");
                format!("z''{}", &plain[1..])
            }
            1 => {
                self.feat("quote_double");
                format!("\"{plain}\"")
            }
            2 => {
                self.feat("quote_backslash");
                format!("\\{plain}")
            }
            3 => {
                self.feat("quote_concat");
                format!("'zq'\"{}\"", &plain[2..])
            }
            _ => plain,
        }
    }

    /// A script level: items separated by newlines or `;`, here-documents and `bash -c` among them.
    fn top(&mut self, depth: usize) -> String {
        let items = 1 + self.rng.below(3);
        let mut out = String::new();
        let mut after_heredoc = false;
        for i in 0..items {
            if i > 0 {
                if after_heredoc || self.rng.percent(50) {
                    self.feat("newline");
                    out.push('\n');
                } else {
                    self.feat("semicolon");
                    out.push_str("; ");
                }
            }
            after_heredoc = false;
            if !self.in_backtick && self.rng.percent(HEREDOC_PERCENT) {
                out.push_str(&self.heredoc(depth));
                after_heredoc = true;
            } else if !self.in_bash_c && self.rng.percent(BASH_C_PERCENT) {
                out.push_str(&self.bash_c(depth));
            } else {
                out.push_str(&self.list(depth, "top"));
            }
        }
        out
    }

    /// `bash -c '…'` one level deep, the inner script quoted with `'\''`.
    fn bash_c(&mut self, depth: usize) -> String {
        self.feat("bash_c");
        self.in_bash_c = true;
        let inner = self.top(depth + 1);
        self.in_bash_c = false;
        format!("bash -c '{}'", inner.replace('\'', "'\\''"))
    }

    fn heredoc(&mut self, depth: usize) -> String {
        let delim = format!("EOF{}", self.fresh());
        let d = (depth + 1).min(MAX_DEPTH);
        match self.rng.below(8) {
            0 => {
                self.feat("heredoc_unquoted");
                let body = self.list(d, "heredoc_body");
                format!(": <<{delim}\nline $( {body} )\n{delim}")
            }
            1 => {
                self.feat("heredoc_command");
                let name = self.name("heredoc_command");
                let body = self.list(d, "heredoc_body");
                format!(
                    "{name} <<{delim}\n$( {body} ) and `{}`\n{delim}",
                    self.name("heredoc_body")
                )
            }
            2 => {
                self.feat("heredoc_sameline");
                let after = self.stmt(depth, "after_heredoc", true);
                format!(": <<{delim}; {after}\nbody\n{delim}")
            }
            3 => {
                self.feat("heredoc_or");
                let name = self.name("heredoc_command");
                let after = self.stmt(depth, "after_heredoc", true);
                format!("{name} <<{delim} || {after}\nx\n{delim}")
            }
            4 => {
                self.feat("heredoc_dash");
                let body = self.list(d, "heredoc_body");
                format!(": <<-{delim}\n\tline $( {body} )\n\t{delim}")
            }
            5 => {
                self.feat("heredoc_quoted");
                let after = self.list(depth, "after_heredoc");
                format!(": <<'{delim}'\nliteral $(not_run) `not_run`\n{delim}\n{after}")
            }
            6 => {
                self.feat("heredoc_pipe");
                let reader = self.name("heredoc_command");
                let body = self.list(d, "heredoc_body");
                format!(": <<{delim} | {reader}\n$( {body} )\n{delim}")
            }
            _ => {
                self.feat("heredoc_group");
                let body = self.list(d, "heredoc_body");
                let after = self.list(d, "after_heredoc");
                format!("{{\n: <<{delim}\n$( {body} )\n{delim}\n{after}\n}}")
            }
        }
    }

    /// One to three statements joined by `&&`, `||`, `;`, `&` or `|`.
    fn list(&mut self, depth: usize, tag: &'static str) -> String {
        let count = 1 + self.rng.below(if self.spent() { 1 } else { 3 });
        let mut out = self.stmt(depth, tag, true);
        for _ in 1..count {
            let (sep, feature) = match self.rng.below(6) {
                0 => (" && ", "and"),
                1 => (" || ", "or"),
                2 => (" & ", "background"),
                3 => (" | ", "pipeline"),
                _ => ("; ", "semicolon"),
            };
            self.feat(feature);
            out.push_str(sep);
            let next = self.stmt(depth, tag, sep != " | ");
            out.push_str(&next);
        }
        out
    }

    fn stmt(&mut self, depth: usize, tag: &'static str, bang_ok: bool) -> String {
        if depth >= MAX_DEPTH || self.spent() {
            return self.simple(depth, tag);
        }
        let d = depth + 1;
        match self.rng.below(22) {
            0 => {
                let first = self.simple(depth, "pipeline");
                let (sep, feature) = if self.rng.percent(25) {
                    (" |& ", "pipe_stderr")
                } else {
                    (" | ", "pipeline")
                };
                self.feat(feature);
                let second = self.stmt(d, "pipeline", false);
                format!("{first}{sep}{second}")
            }
            1 if bang_ok => {
                self.feat("negation");
                format!("! {}", self.simple(depth, "negation"))
            }
            2 => {
                self.feat("subshell");
                format!("( {} )", self.list(d, "subshell"))
            }
            3 => {
                self.feat("group");
                format!("{{ {}; }}", self.list(d, "group"))
            }
            4 => self.if_stmt(d),
            5 => self.for_stmt(d),
            6 => self.loop_stmt(d),
            7 => self.case_stmt(d),
            8 => self.function(d),
            9 => self.test_stmt(d),
            10 => self.assignment(d),
            11 => {
                let (form, feature) = if self.rng.percent(50) {
                    (": <( {} )", "procsub_in")
                } else {
                    (": > >( {} )", "procsub_redirect")
                };
                self.feat(feature);
                let body = self.list(d, feature);
                form.replace("{}", &body)
            }
            12 if !self.in_bash_c => self.bash_c(d),
            _ => self.simple(depth, tag),
        }
    }

    fn if_stmt(&mut self, d: usize) -> String {
        self.feat("if");
        let cond = self.simple(d, "if_condition");
        let then = self.list(d, "if_then");
        let mut out = format!("if {cond}; then {then}; ");
        if self.rng.percent(50) {
            self.feat("elif");
            let cond = self.simple(d, "if_condition");
            let body = self.list(d, "if_then");
            write!(out, "elif {cond}; then {body}; ").unwrap();
        }
        if self.rng.percent(70) {
            self.feat("else");
            let body = self.list(d, "if_else");
            write!(out, "else {body}; ").unwrap();
        }
        out.push_str("fi");
        out
    }

    fn for_stmt(&mut self, d: usize) -> String {
        self.feat("for");
        let var = format!("v{}", self.fresh());
        match self.rng.below(3) {
            0 => format!("for {var} in a b; do {}; done", self.list(d, "for_body")),
            1 => {
                self.feat("for_subst");
                let words = self.list(d, "for_words");
                let body = self.list(d, "for_body");
                format!("for {var} in a $( {words} ); do {body}; done")
            }
            _ => {
                self.feat("for_arith");
                let body = self.list(d, "for_body");
                format!("for (( {var} = 0; {var} < 1; {var}++ )); do {body}; done")
            }
        }
    }

    /// Loops that end: every condition is a name that is not found.
    fn loop_stmt(&mut self, d: usize) -> String {
        let cond = self.simple(d, "loop_condition");
        let body = self.list(d, "loop_body");
        match self.rng.below(3) {
            0 => {
                self.feat("while");
                format!("while {cond}; do {body}; done")
            }
            1 => {
                self.feat("while_not");
                format!("while ! {cond}; do {body}; break; done")
            }
            _ => {
                self.feat("until");
                format!("until {cond}; do {body}; break; done")
            }
        }
    }

    fn case_stmt(&mut self, d: usize) -> String {
        if self.in_arith {
            // bash 5.2 reads `$(( $( case … esac ) + 1 ))` as `$( ( … ) + 1 )` and runs `+`;
            // `case_inside_arithmetic_is_a_command_substitution_for_bash` covers that on its own.
            self.feat("group");
            return format!("{{ {}; }}", self.list(d, "group"));
        }
        self.feat("case");
        let body = self.list(d, "case_body");
        if self.rng.percent(50) {
            self.feat("case_subst");
            let subject = self.list(d, "case_subject");
            let other = self.list(d, "case_body");
            format!("case $( {subject} ) in a) {other};; *) {body};; esac")
        } else {
            format!("case w in w) {body};; esac")
        }
    }

    fn function(&mut self, d: usize) -> String {
        self.feat("function");
        let k = self.fresh();
        let fname = format!("fn_{}_{k}", self.index);
        let body = self.list(d, "function_body");
        match self.rng.below(3) {
            0 => format!("{{ {fname}() {{ {body}; }}; {fname}; }}"),
            1 => {
                self.feat("function_keyword");
                format!("{{ function {fname} {{ {body}; }}; {fname} a; }}")
            }
            _ => {
                self.feat("function_subshell");
                format!("{{ {fname}() ( {body} ); {fname}; }}")
            }
        }
    }

    fn test_stmt(&mut self, d: usize) -> String {
        if self.rng.percent(25) {
            self.feat("arith_command");
            let was = self.in_arith;
            self.in_arith = true;
            let body = self.list(d, "test");
            self.in_arith = was;
            return format!("(( $( {body} ) + 1 ))");
        }
        let body = self.list(d, "test");
        match self.rng.below(3) {
            1 => {
                self.feat("test_double");
                format!("[[ -z $( {body} ) ]]")
            }
            2 => {
                self.feat("test_double");
                format!("[[ $( {body} ) == x ]]")
            }
            _ => {
                self.feat("test_single");
                format!("[ -z \"$( {body} )\" ]")
            }
        }
    }

    fn assignment(&mut self, d: usize) -> String {
        let var = format!("v{}", self.fresh());
        let body = self.list(d, "assignment");
        match self.rng.below(5) {
            0 => {
                self.feat("export_assignment");
                format!("export {var}=$( {body} )")
            }
            1 => {
                self.feat("declare_assignment");
                format!("declare {var}=\"$( {body} )\"")
            }
            2 => {
                self.feat("array_assignment");
                format!("{var}=( $( {body} ) x )")
            }
            _ => {
                self.feat("assignment");
                format!("{var}=$( {body} )")
            }
        }
    }

    /// A simple command: an optional leading assignment, a name, arguments, a redirection.
    fn simple(&mut self, depth: usize, tag: &'static str) -> String {
        let mut out = String::new();
        if depth < MAX_DEPTH && !self.spent() && self.rng.percent(8) {
            self.feat("leading_assignment");
            let var = format!("v{}", self.fresh());
            let value = self.list(depth + 1, "leading_assignment");
            write!(out, "{var}=$( {value} ) ").unwrap();
        }
        out.push_str(&self.name(tag));
        for _ in 0..self.rng.below(3) {
            out.push(' ');
            let word = self.word(depth);
            out.push_str(&word);
        }
        if self.rng.percent(15) {
            out.push(' ');
            let redirect = self.redirect(depth);
            out.push_str(&redirect);
        }
        out
    }

    fn word(&mut self, depth: usize) -> String {
        if depth >= MAX_DEPTH || self.spent() || self.rng.percent(45) {
            return format!("a{}", self.rng.below(100));
        }
        let d = depth + 1;
        let choice = self.rng.below(if self.in_backtick { 9 } else { 10 });
        let (form, feature, tag): (&str, _, _) = match choice {
            0 => ("$( {} )", "cmdsub", "cmdsub"),
            1 => ("\"$( {} )\"", "cmdsub_quoted", "cmdsub"),
            2 => ("${u:-$( {} )}", "param_default", "param_default"),
            3 => ("$(( $( {} ) + 1 ))", "arith_subst", "arith_subst"),
            4 => ("<( {} )", "procsub_in", "procsub_in"),
            5 => (">( {} )", "procsub_out", "procsub_out"),
            6 => ("pre$( {} )post", "cmdsub_concat", "cmdsub"),
            7 => ("\"${u:-$( {} )}\"", "param_default", "param_default"),
            8 => ("\"x$( {} )y\"", "cmdsub_quoted", "cmdsub"),
            _ => ("`{}`", "backtick", "backtick"),
        };
        self.feat(feature);
        let (was_backtick, was_arith) = (self.in_backtick, self.in_arith);
        self.in_backtick |= feature == "backtick";
        self.in_arith |= feature == "arith_subst";
        let body = self.list(d, tag);
        (self.in_backtick, self.in_arith) = (was_backtick, was_arith);
        let unset = format!("u{}", self.fresh());
        form.replace("{}", &body)
            .replace("${u:", &format!("${{{unset}:"))
    }

    fn redirect(&mut self, depth: usize) -> String {
        let k = self.fresh();
        let d = depth + 1;
        let can_nest = depth < MAX_DEPTH && !self.spent();
        match self.rng.below(8) {
            5 if can_nest => {
                self.feat("redirect_subst");
                format!("> \"out$( {} ).txt\"", self.list(d, "redirect_target"))
            }
            6 if can_nest => {
                self.feat("procsub_redirect");
                format!("> >( {} )", self.list(d, "procsub_redirect"))
            }
            7 if can_nest => {
                self.feat("herestring");
                format!("<<< \"$( {} )\"", self.list(d, "herestring"))
            }
            0 => {
                self.feat("redirect_file");
                format!("> out{k}.txt")
            }
            1 => format!(">> out{k}.txt"),
            2 => format!("2> err{k}.txt"),
            3 => format!("&> all{k}.txt"),
            4 => "2>&1".to_string(),
            _ => "< /dev/null".to_string(),
        }
    }
}

/// Whether `unshare -rn` gives the scripts a network namespace of their own here.
fn unshare_works() -> bool {
    Command::new("unshare")
        .args(["-rn", BASH, "-c", ":"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// What bash did with each script: the names its `command_not_found_handle` logged and what the
/// script wrote on stderr.
struct BashRun {
    logs: Vec<Vec<String>>,
    stderr: Vec<String>,
    unshare: bool,
    elapsed: Duration,
}

/// Run every script through bash: in batches of `BATCH` scripts, one bash process a batch, two
/// batches at a time. Each script is sourced in a subshell, in its own scratch directory under a
/// temporary root, with stdin from /dev/null.
fn run_in_bash(texts: &[String]) -> BashRun {
    let started = Instant::now();
    assert!(
        Path::new(BASH).exists(),
        "{BASH} is needed for the differential test"
    );
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    for (i, text) in texts.iter().enumerate() {
        std::fs::create_dir(root.join(i.to_string())).unwrap();
        std::fs::write(root.join(format!("{i}.sh")), text).unwrap();
    }
    let unshare = unshare_works();
    let next = AtomicUsize::new(0);
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let start = next.fetch_add(BATCH, Ordering::SeqCst);
                    if start >= texts.len() {
                        break;
                    }
                    let end = (start + BATCH).min(texts.len());
                    if let Err(e) = run_batch(root, start..end, unshare) {
                        errors.lock().unwrap().push(e);
                    }
                }
            });
        }
    });
    let errors = errors.into_inner().unwrap();
    assert!(
        errors.is_empty(),
        "bash batches failed:\n{}",
        errors.join("\n")
    );
    let read = |name: String| std::fs::read_to_string(root.join(name)).unwrap_or_default();
    BashRun {
        logs: (0..texts.len())
            .map(|i| {
                read(format!("{i}.log"))
                    .lines()
                    .map(str::to_string)
                    .collect()
            })
            .collect(),
        stderr: (0..texts.len()).map(|i| read(format!("{i}.err"))).collect(),
        unshare,
        elapsed: started.elapsed(),
    }
}

/// One bash process runs a batch. fd 9, inherited by everything the batch starts (background
/// jobs and process substitutions included), tells by its end-of-file when the last has ended.
fn run_batch(root: &Path, batch: Range<usize>, unshare: bool) -> Result<(), String> {
    let mut runner = String::from(
        "exec 9>&1 >/dev/null 2>&1\n\
         command_not_found_handle() { printf '%s\\n' \"$1\" >> \"$LOG\"; return 127; }\n\
         export -f command_not_found_handle\n\
         spear_run() { cd \"$1\" || return; export LOG=\"$1.log\"; . \"$1.sh\"; wait; }\n",
    );
    for i in batch.clone() {
        let dir = root.join(i.to_string());
        let dir = dir.display();
        writeln!(
            runner,
            "( spear_run '{dir}' ) </dev/null >/dev/null 2>'{dir}.err'"
        )
        .unwrap();
    }
    let runner_path = root.join(format!("batch-{}.sh", batch.start));
    std::fs::write(&runner_path, runner).unwrap();
    let mut command = if unshare {
        let mut c = Command::new("unshare");
        c.args(["-rn", BASH]);
        c
    } else {
        Command::new(BASH)
    };
    command
        .args(["--norc", "--noprofile"])
        .arg(&runner_path)
        .current_dir(root)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", root)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0);
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start bash: {e}"))?;
    let mut stdout = child.stdout.take().unwrap();
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = stdout.read_to_end(&mut sink);
        let _ = done.send(());
    });
    let outcome = finished.recv_timeout(BATCH_TIMEOUT);
    if outcome.is_err() {
        // The batch's own process group, and only it.
        let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.wait();
    outcome.map_err(|_| format!("batch {batch:?} did not end within {BATCH_TIMEOUT:?}; killed"))
}

/// A logged name the classifier did not see.
struct Miss {
    report: String,
    /// The classifier's class is at least SHELL_COMPLEX because of a here-document or a parse
    /// error, which is how it is allowed to give up on reading names.
    exempt: bool,
}

/// `f` over every item, on two threads, in order.
fn on_two_threads<T: Sync, R: Send>(items: &[T], f: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    let half = items.len().div_ceil(2).max(1);
    let f = &f;
    std::thread::scope(|scope| {
        let parts: Vec<_> = items
            .chunks(half)
            .enumerate()
            .map(|(c, chunk)| {
                scope.spawn(move || {
                    let start = c * half;
                    chunk
                        .iter()
                        .enumerate()
                        .map(|(j, t)| f(start + j, t))
                        .collect::<Vec<R>>()
                })
            })
            .collect();
        parts.into_iter().flat_map(|p| p.join().unwrap()).collect()
    })
}

/// Whether the script, or a `bash -c` script inside it, holds a here-document or does not parse
/// cleanly: the two reasons the classifier may give up on reading names (CRATES.md).
fn heredoc_or_parse_error(text: &str, depth: usize) -> bool {
    let facts = shell::parse(text);
    if !facts.heredocs.is_empty() || !facts.parse_errors.is_empty() {
        return true;
    }
    depth < 3
        && facts.commands.iter().any(|c| {
            matches!(c.name.value.as_str(), "bash" | "sh")
                && c.args.len() >= 2
                && c.args[0].value == "-c"
                && heredoc_or_parse_error(&c.args[1].value, depth + 1)
        })
}

/// Compare what bash ran with what the classifier saw, for one script.
fn check(
    index: usize,
    text: &str,
    logged: &[String],
    tag_of: &dyn Fn(&str) -> String,
) -> Option<Miss> {
    let facts = shell::parse(text);
    let assessment = CommandPolicy::default().classify(text);
    let mut seen: HashSet<&str> = facts
        .commands
        .iter()
        .map(|c| c.name.value.as_str())
        .collect();
    seen.extend(assessment.executables.iter().map(String::as_str));
    let missed: BTreeSet<&str> = logged
        .iter()
        .map(String::as_str)
        .filter(|n| !seen.contains(n))
        .collect();
    if missed.is_empty() {
        return None;
    }
    let placed: Vec<String> = missed
        .iter()
        .map(|n| format!("{n} ({})", tag_of(n)))
        .collect();
    Some(Miss {
        report: format!(
            "script {index} (class {}): bash ran {placed:?}, the classifier did not see them\n\
             --- script ---\n{text}\n--- classifier executables: {:?}\n--- reasons: {:?}",
            assessment.class, assessment.executables, assessment.reasons
        ),
        exempt: assessment.class >= CommandClass::ShellComplex && heredoc_or_parse_error(text, 0),
    })
}

#[test]
fn classifier_sees_every_command_bash_runs() {
    let started = Instant::now();
    let scripts: Vec<Script> = (0..SCRIPTS).map(Gen::script).collect();
    let texts: Vec<String> = scripts.iter().map(|s| s.text.clone()).collect();
    let run = run_in_bash(&texts);
    let mut checked = on_two_threads(&scripts, |i, script| {
        let tag_of = |name: &str| {
            let tag = script.names.iter().find(|(n, _)| n == name);
            tag.map_or("not generated".to_string(), |(_, t)| format!("in {t}"))
        };
        check(i, &script.text, &run.logs[i], &tag_of)
    });

    let mut failures = Vec::new();
    let mut misses = Vec::new();
    let mut exempted = Vec::new();
    let mut broken = Vec::new();
    let mut logged_by_tag: BTreeMap<&str, usize> = BTreeMap::new();
    let mut feature_counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, script) in scripts.iter().enumerate() {
        for feature in &script.features {
            *feature_counts.entry(feature).or_default() += 1;
        }
        let tag = |name: &str| {
            script
                .names
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| *t)
        };
        let stderr = &run.stderr[i];
        if stderr.contains("syntax error") || stderr.contains("unexpected EOF") {
            broken.push(format!(
                "script {i} is not valid bash:\n{}bash said: {stderr}",
                script.text
            ));
        }
        for name in &run.logs[i] {
            match tag(name) {
                Some(t) => *logged_by_tag.entry(t).or_default() += 1,
                None => broken.push(format!(
                    "script {i}: bash ran `{name}`, which the generator did not write:\n{}",
                    script.text
                )),
            }
        }
        if let Some(miss) = checked[i].take() {
            if miss.exempt {
                &mut exempted
            } else {
                &mut misses
            }
            .push(miss.report);
        }
    }

    let logged_total: usize = run.logs.iter().map(Vec::len).sum();
    let scripts_with_logs = run.logs.iter().filter(|l| !l.is_empty()).count();
    let names_generated: usize = scripts.iter().map(|s| s.names.len()).sum();
    println!(
        "differential: {} scripts, {names_generated} names generated, {logged_total} names logged \
         by bash in {scripts_with_logs} scripts, {} misses, {} exempted (here-document or parse \
         error and class >= SHELL_COMPLEX), network namespace: {}, bash {:.1?}, total {:.1?}",
        scripts.len(),
        misses.len(),
        exempted.len(),
        if run.unshare {
            "own (unshare -rn)"
        } else {
            "shared (unshare -rn unavailable)"
        },
        run.elapsed,
        started.elapsed()
    );
    for report in &exempted {
        println!("exempted: {report}\n");
    }

    // The generator must be sound and the run not vacuous, or the comparison means nothing.
    if !broken.is_empty() {
        failures.push(format!(
            "{} generator problems (bash read a script otherwise than meant):\n\n{}",
            broken.len(),
            broken.join("\n\n")
        ));
    }
    if scripts_with_logs * 100 < scripts.len() * 95 || logged_total < 2 * scripts.len() {
        failures.push(format!(
            "bash logged only {logged_total} names in {scripts_with_logs} of {} scripts: is \
             command_not_found_handle working?",
            scripts.len()
        ));
    }
    let rare: Vec<_> = FEATURES
        .iter()
        .map(|f| (*f, feature_counts.get(f).copied().unwrap_or(0)))
        .filter(|(_, n)| *n < 15)
        .collect();
    if !rare.is_empty() {
        failures.push(format!(
            "constructs generated in fewer than 15 scripts: {rare:?}"
        ));
    }
    let silent: Vec<_> = LOGGED_TAGS
        .iter()
        .filter(|t| logged_by_tag.get(*t).copied().unwrap_or(0) == 0)
        .collect();
    if !silent.is_empty() {
        failures.push(format!(
            "bash logged no name from these constructs: {silent:?} (logged: {logged_by_tag:?})"
        ));
    }
    if exempted.len() * 10 > scripts.len() {
        failures.push(format!(
            "{} of {} scripts were exempted (here-document or parse error): more than 10%",
            exempted.len(),
            scripts.len()
        ));
    }
    if !misses.is_empty() {
        failures.push(format!(
            "{} of {} scripts ran commands the classifier did not see:\n\n{}",
            misses.len(),
            scripts.len(),
            misses.join("\n\n")
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n========\n\n"));
}

/// bash 5.2 decides between `$(( … ))` arithmetic and a command substitution holding a subshell
/// by reparsing: a `case` inside makes it read `$( ( … ) + 1 )` and run `+` as a command. Those
/// names are run as surely as any other, so the classifier must see them too.
#[test]
fn case_inside_arithmetic_is_a_command_substitution_for_bash() {
    let texts: Vec<String> = [
        ": $(( $( case w in w) zqx_0_1;; esac ) + 1 ))\n",
        ": $(( $( case w in (w) zqx_1_1;; esac ) + 1 ))\n",
        "(( $( case w in w) zqx_2_1;; esac ) + 1 ))\n",
        "zqx_3_1 $(( $( zqx_3_2; case w in w) zqx_3_3;; esac ) - 1 ))\n",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let run = run_in_bash(&texts);
    let mut reports = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        assert!(
            run.logs[i]
                .iter()
                .any(|n| n.starts_with(&format!("zqx_{i}_"))),
            "bash logged nothing for {text:?}: the harness is broken ({:?})",
            run.stderr[i]
        );
        if let Some(miss) = check(i, text, &run.logs[i], &|_| "hand-written".to_string()) {
            reports.push(miss.report);
        }
    }
    assert!(
        reports.is_empty(),
        "{} of {} scripts ran commands the classifier did not see:\n\n{}",
        reports.len(),
        texts.len(),
        reports.join("\n\n")
    );
}

/// Constructs from which bash must have logged at least one name over the whole run.
#[rustfmt::skip]
const LOGGED_TAGS: &[&str] = &[
    "top", "pipeline", "negation", "subshell", "group", "if_condition", "if_else", "for_body",
    "for_words", "loop_condition", "loop_body", "case_body", "case_subject", "function_body",
    "test", "assignment", "leading_assignment", "cmdsub", "backtick", "param_default",
    "arith_subst", "procsub_in", "procsub_out", "procsub_redirect", "redirect_target",
    "herestring", "heredoc_body", "heredoc_command", "after_heredoc",
];
