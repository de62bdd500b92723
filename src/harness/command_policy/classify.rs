//! `classify`: the walk from shell facts to an assessment. Structure first (parse errors,
//! here-documents, functions, assignments, redirections), then every simple command, then the
//! rules that span commands (remote code piped or substituted into an interpreter, here-documents
//! feeding one). Each finding can only raise the class.
//!
//! # The invariant: READ_ONLY is a proof
//!
//! An assessment starts at READ_ONLY and every finding can only raise it, so READ_ONLY is what
//! is left when nothing was found. That is a proof only because "nothing found" is reached by
//! reading everything with a model that knows it, never by failing to look. Each of these
//! must hold, and each check raises when it cannot show its part:
//!
//! 1. **The whole source was read.** Every reading parsed without error, within the budget and
//!    the depth bound, and every named node the grammar produced is one the walk models
//!    (`shell/walk.rs`: `DISPATCHED` or `WALKED_THROUGH`, tested against the grammar itself).
//! 2. **Every command is known.** Its name is literal and on the read-only allow-list, whose
//!    entries list the options that keep it read-only (positive lists: an option not listed
//!    is not read-only); a wrapper (`env`, `timeout`, `time`, `xargs`, …) is read through to
//!    what it runs, and what is DANGEROUS directly stays DANGEROUS behind it.
//! 3. **Every program text is parsed completely** (sed, awk, inline interpreter code) under
//!    every dialect the host may run under that name; a construct any of them gives a side
//!    effect, or text the parser cannot accept, is not read-only.
//! 4. **Every path is judged on its words** (`paths.rs`): the kernel's own links expanded,
//!    `..` folded only where nothing before it can be a link, otherwise an unknown place. Only
//!    an exact sink is harmless, and only as a redirection target; `/dev/fd/N` is the file fd
//!    N was opened on (`descriptors.rs`).
//! 5. **Every expansion and assignment is known harmless**: a variable handed to a program is
//!    on `env_names.rs`'s list with a reason; places where bash evaluates a value as code
//!    (arithmetic on variables, subscripts, indirection, history expansion) are findings.
//! 6. **Nothing outlives the reading**: a `&` job, a function definition, a here-document fed
//!    to a shell, or a trap is at least SHELL_COMPLEX.
//!
//! The write-attempt oracle (`tests/oracle`) runs READ_ONLY commands under strace in the sandbox
//! to find where a part of this proof is wrong; each miss becomes a corpus entry.

use super::assessment::{CommandAssessment, CommandClass};
use super::descriptors::{self, Behind};
use super::invocations;
use super::paths::{self, Scope};
use super::tables::{self, base_name};
use super::wrappers;
use super::{PolicyConfig, env_names, scripts};
use crate::harness::shell::{
    self, Assignment, Budget, Redirect, RedirectKind, Resource, ShellFacts, SimpleCommand, Word,
};

use CommandClass::{Dangerous, ShellComplex, WorkspaceMutating};

/// How many shells deep (`bash -c "bash -c …"`, `eval`) classification follows a command.
pub const MAX_NESTED_SCRIPTS: usize = 8;
/// How many wrappers deep (`nice timeout env …`) classification follows a command.
const MAX_WRAPPERS: usize = 32;

/// Why a path is written, which decides how a path outside the workspace is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteKind {
    Plain,
    /// A recursive deletion, chmod or chown: outside the workspace this is DANGEROUS.
    Recursive,
    /// A path an inline program mentions: it may be written, so it is recorded; it is not
    /// proof of a write, so a system path here is not by itself DANGEROUS.
    Mentioned,
}

/// Classify `source`, `depth` shells deep, every cost charged to `budget` (shared with the
/// nested shells it reads). Past the budget the answer is at least SHELL_COMPLEX, with the
/// budget's reason: what was read still counts, what was not is never taken as harmless.
pub(crate) fn classify(
    config: &PolicyConfig,
    source: &str,
    depth: usize,
    budget: &Budget,
) -> CommandAssessment {
    let mut assessment = CommandAssessment::new(source);
    if depth > MAX_NESTED_SCRIPTS {
        assessment.raise(
            Dangerous,
            format!("shells are nested more than {MAX_NESTED_SCRIPTS} deep, too deep to check"),
        );
        return assessment;
    }
    // Only the command as given is measured: a nested script is part of it, and its parse is
    // charged as parsed bytes.
    if depth == 0 {
        budget.charge(Resource::SourceBytes, source.len() as u64);
    }
    if let Some(reason) = budget.reason() {
        assessment.raise(ShellComplex, reason);
        return assessment;
    }
    let facts = shell::parse_within(source, budget);
    let mut cx = Cx {
        config,
        depth,
        facts: &facts,
        a: &mut assessment,
        wrappers: 0,
        cwd: None,
        cd_dirs: (Vec::new(), false),
        budget,
        current: 0,
    };
    cx.structure();
    for (i, cmd) in facts.commands.iter().enumerate() {
        cx.current = i;
        cx.simple(cmd);
    }
    cx.cross_command_rules();
    if let Some(reason) = budget.reason() {
        assessment.raise(ShellComplex, reason);
    }
    if depth == 0 {
        assessment.literal_argv = super::literal::literal_argv(source, &facts);
    }
    if assessment.reasons.is_empty() {
        let reason = if facts.commands.is_empty() {
            "there is no command to run".to_string()
        } else {
            "every command is on the read-only allow-list".to_string()
        };
        assessment.reasons.push(reason);
    }
    assessment
}

pub(crate) struct Cx<'c> {
    pub config: &'c PolicyConfig,
    pub depth: usize,
    pub facts: &'c ShellFacts,
    pub a: &'c mut CommandAssessment,
    pub wrappers: usize,
    /// Where relative paths land when the command changes directory (`cd /etc && …`): the
    /// worst place any `cd` in the line goes, when that is not the workspace.
    pub cwd: Option<Scope>,
    /// The directories outside the workspace a `cd` in the line moves to, as written
    /// (`cd /dev && cat watchdog` opens `/dev/watchdog`), and whether one it moves to is not
    /// fixed by the line (then a relative path may name any file, a device included).
    pub cd_dirs: (Vec<String>, bool),
    /// What the whole classification may still spend.
    pub budget: &'c Budget,
    /// The index in `facts.commands` of the simple command being judged.
    pub current: usize,
}

impl Cx<'_> {
    pub fn raise(&mut self, class: CommandClass, reason: impl Into<String>) {
        self.a.raise(class, reason);
    }

    /// What `judge` finds, judged on its own and not yet folded in: a wrapper that changes
    /// nothing but how its command runs is read-only exactly when that command is.
    pub fn apart(&mut self, judge: impl FnOnce(&mut Self)) -> CommandAssessment {
        let fresh = CommandAssessment::new(&self.a.command);
        let outer = std::mem::replace(&mut *self.a, fresh);
        judge(self);
        std::mem::replace(&mut *self.a, outer)
    }

    /// Classify a nested script (`bash -c`, `eval`, a here-document fed to a shell) and fold it in.
    pub fn nested_script(&mut self, script: &str) {
        let inner = classify(self.config, script, self.depth + 1, self.budget);
        self.a.absorb(inner);
    }

    fn structure(&mut self) {
        let f = self.facts;
        self.cwd = directory_changes(f, self.config.workspace_root.as_deref());
        self.cd_dirs = directories_moved_to(f, self.config.workspace_root.as_deref());
        for doc in f.heredocs.iter().filter(|d| !d.quoted) {
            for sub in scripts::substitutions_in_text(&doc.body) {
                self.raise(
                    ShellComplex,
                    "a here-document body runs command substitutions",
                );
                self.nested_script(&sub);
            }
        }
        if f.too_deep {
            self.raise(
                Dangerous,
                format!(
                    "the command nests deeper than {} levels, too deep to check",
                    shell::MAX_TREE_DEPTH
                ),
            );
        }
        for kind in &f.unmodelled {
            self.raise(
                ShellComplex,
                format!(
                    "the command contains `{kind}`, a bash construct Spear's reader does not model"
                ),
            );
        }
        if let Some(e) = f.parse_errors.first() {
            self.raise(
                ShellComplex,
                format!("the command does not parse cleanly as bash ({e})"),
            );
        }
        if !f.heredocs.is_empty() {
            self.raise(
                ShellComplex,
                "a here-document is used, and the bash grammar is unreliable around them",
            );
        }
        if f.arithmetic_on_variables {
            self.raise(
                ShellComplex,
                "arithmetic on a variable evaluates its value, which can run commands through array subscripts",
            );
        }
        if f.background {
            self.raise(
                ShellComplex,
                "starts a background job, which the sandbox kills when the command ends",
            );
        }
        for e in &f.evaluations {
            self.raise(ShellComplex, format!("{e}, which can run commands"));
        }
        for func in &f.functions {
            let recursive = f.commands[func.body.clone()]
                .iter()
                .any(|c| c.name.value == func.name);
            if recursive && (func.body_source.contains('&') || func.body_source.contains('|')) {
                self.raise(
                    Dangerous,
                    format!(
                        "`{}` is a fork bomb: a function that starts copies of itself",
                        func.name
                    ),
                );
            }
            self.raise(
                ShellComplex,
                format!(
                    "defines the shell function `{}`, which can shadow a command",
                    func.name
                ),
            );
        }
        for asg in &f.assignments {
            self.assignment_name(&asg.name, "sets");
            self.shell_locale(&asg.name, asg.value.as_ref());
        }
        for decl in &f.declarations {
            self.declaration(decl);
        }
        // Each redirection with its place in its own command's list (the order they apply
        // in); a compound statement's are judged as if nothing before them bound a descriptor.
        let placed = f.commands.iter().flat_map(|c| {
            c.redirects
                .iter()
                .enumerate()
                .map(|(i, r)| (r, Some((c.redirects.as_slice(), i))))
        });
        let statements = f.statement_redirects.iter().map(|r| (r, None));
        for (r, place) in placed.chain(statements) {
            let Some(target) = &r.target else { continue };
            self.watchdog(target);
            self.read_after_cd(target);
            if paths::scope(target, None) == Scope::NetworkDevice {
                self.network_device(target);
                continue;
            }
            if r.kind.writes() {
                let who = format!("the redirection `{}`", r.kind.operator());
                self.redirect_target(r, &who, place);
            }
        }
    }

    /// A redirection writes `target`: a discard device is no write; `/dev/fd/N`, `/dev/stdout`
    /// and the like write the file descriptor N holds (taken from the whole line's
    /// redirections); everything else is judged as any written path.
    /// `place` is the redirection's own command's list and its index there; None for a
    /// compound statement's, or a program's own output file (awk's `print > "/dev/stderr"`),
    /// whose order among the line's redirections is not known.
    pub(crate) fn redirect_target(
        &mut self,
        this: &Redirect,
        who: &str,
        place: Option<(&[Redirect], usize)>,
    ) {
        let Some(target) = &this.target else { return };
        let root = self.config.workspace_root.as_deref();
        let fd = match paths::scope(target, root) {
            Scope::Harmless => return,
            Scope::Descriptor(fd) => fd,
            _ => return self.write_target(target, who, WriteKind::Plain),
        };
        let f = self.facts;
        let redirects: Vec<_> = f.all_redirects().collect();
        let nested = self.depth > 0;
        match descriptors::behind(fd, &redirects, nested) {
            Behind::Stream
                if match place {
                    Some((list, at)) => descriptors::stream_when_applied(fd, list, at, nested),
                    // Without the order: a stream only if nothing in the line rebinds it.
                    None => {
                        descriptors::stream_when_applied(fd, &[], 0, nested)
                            && !descriptors::rebound_elsewhere(fd, &redirects, this)
                    }
                } => {}
            Behind::Stream => {
                self.raise(
                    ShellComplex,
                    format!(
                        "{who} writes `{}`, reopening descriptor {fd} before the command's own \
                         redirections bind it (they apply left to right), so it is the one \
                         the command inherited",
                        target.value
                    ),
                );
                self.a.add_write(&target.value);
            }
            Behind::Files(files) => {
                let who = format!("{who} (reopening descriptor {fd} on `{}`)", target.value);
                for file in &files {
                    self.write_target(file, &who, WriteKind::Plain);
                }
                // Which file that is depends on the rest of the line; the same words alone are
                // an unknown descriptor. A line is never judged below any of its parts, so the
                // reopening stays complex even when the file behind it is known (and recorded).
                self.raise(
                    ShellComplex,
                    format!(
                        "{who} writes `{}`, reopening descriptor {fd} that another redirection of \
                         the line opened",
                        target.value
                    ),
                );
            }
            Behind::Unknown => {
                self.raise(
                    ShellComplex,
                    format!(
                        "{who} writes `{}`, the file behind descriptor {fd}, which the command line does not show",
                        target.value
                    ),
                );
                self.a.add_write(&target.value);
            }
        }
    }

    fn declaration(&mut self, decl: &shell::Declaration) {
        // `export`, and `declare -x`/`local -x`/`typeset -x`, hand the names to every program
        // run after them.
        let exports = decl.keyword == "export"
            || decl
                .args
                .iter()
                .any(|a| a.is_static() && a.value.starts_with('-') && a.value.contains('x'));
        for asg in &decl.assignments {
            self.shell_locale(&asg.name, asg.value.as_ref());
            let verb = format!("`{}` sets", decl.keyword);
            if exports {
                self.env_assignment(&asg.name, &verb);
            } else {
                self.assignment_name(&asg.name, &verb);
            }
        }
        // `declare -a 'a=($(cmd))'`, `declare 'a=([$(cmd)]=1)'` (a already an array): bash
        // reads a quoted compound assignment again, as code, and runs what it holds.
        let arrays = decl
            .args
            .iter()
            .any(|a| a.is_static() && a.value.starts_with('-') && a.value.contains(['a', 'A']));
        let reread =
            |value: &str| value.starts_with('(') || (arrays && value.contains(['$', '`', '[']));
        // An assignment the grammar read (`a=\(…\)`) is re-read the same way unless its value
        // was a real compound assignment, written with a bare `(`.
        let grammar_read = decl.assignments.iter().filter_map(|asg| {
            let v = asg.value.as_ref()?;
            (!v.raw.starts_with('(') && reread(&v.value)).then_some(asg.raw.as_str())
        });
        let quoted = decl.args.iter().filter_map(|arg| {
            let (_, value) = arg.value.split_once('=')?;
            (arg.is_static() && reread(value)).then_some(arg.raw.as_str())
        });
        let read_again: Vec<&str> = grammar_read.chain(quoted).collect();
        for raw in read_again {
            self.raise(
                ShellComplex,
                format!(
                    "`{} {raw}` is read again by bash as an array assignment, which can run \
                     commands",
                    decl.keyword
                ),
            );
        }
        // `unset 'a[$(cmd)]'`, `declare 'a[$(cmd)]=1'`: bash evaluates the subscript.
        for arg in decl.args.iter().filter(|a| a.is_static()) {
            let name = arg.value.split('=').next().unwrap_or(&arg.value);
            if name.contains('[') && !shell::plain_variable_name(name) {
                self.raise(
                    ShellComplex,
                    format!(
                        "`{} {}` evaluates the array subscript, which can run commands",
                        decl.keyword, arg.raw
                    ),
                );
            }
        }
        if decl.keyword == "unset" {
            self.unset(decl);
            return;
        }
        for arg in &decl.args {
            let v = arg.value.as_str();
            if arg.dynamic {
                self.raise(
                    ShellComplex,
                    format!(
                        "`{}` takes `{}`, known only at run time",
                        decl.keyword, arg.raw
                    ),
                );
            } else if v.starts_with('-') || v.starts_with('+') {
                if v.contains(['n', 'i']) {
                    self.raise(
                        ShellComplex,
                        format!(
                            "`{} {v}` makes later assignments evaluate or redirect variables",
                            decl.keyword
                        ),
                    );
                }
            } else if exports {
                if let Some((name, value)) = v.split_once('=') {
                    self.shell_locale_text(name, Some(value));
                }
                self.env_assignment(
                    v.split('=').next().unwrap_or(v),
                    &format!("`{}` exports", decl.keyword),
                );
            } else if v.contains('=') {
                if let Some((name, value)) = v.split_once('=') {
                    self.shell_locale_text(name, Some(value));
                }
                self.assignment_name(
                    v.split('=').next().unwrap_or(v),
                    &format!("`{}` sets", decl.keyword),
                );
            }
        }
    }

    /// `LANG`, `LC_ALL` or `LC_CTYPE` set in the shell itself: its value is bash's locale for
    /// the lines after it (see `env_names::harmless_shell_locale`).
    fn shell_locale(&mut self, name: &str, value: Option<&shell::Word>) {
        let text = value.filter(|w| w.is_static()).map(|w| w.value.as_str());
        let unknown = value.is_some_and(|w| !w.is_static());
        if unknown {
            return self.shell_locale_text(name, None);
        }
        self.shell_locale_text(name, text.or(Some("")));
    }

    fn shell_locale_text(&mut self, name: &str, value: Option<&str>) {
        if !env_names::harmless_shell_locale(name, value) {
            self.raise(
                ShellComplex,
                format!(
                    "sets `{name}` in the shell, and bash reads the lines after it in that \
                     locale, whose character set may end a string or escape where UTF-8 does not"
                ),
            );
        }
    }

    /// A shell variable set without exporting it (`x=1`, `local x=1`).
    pub fn assignment_name(&mut self, name: &str, verb: &str) {
        if !env_names::harmless_shell_variable(name) {
            self.raise(
                ShellComplex,
                format!("{verb} `{name}`, which can change what programs run or how they behave"),
            );
        }
    }

    /// `{NAME}>file` opens a descriptor and stores its number in NAME; `{a[EXPR]}>file`
    /// evaluates EXPR, which can run commands (`{a['$(cmd)']}` does). The grammar gives the
    /// `{…}` as a word beside the redirection.
    fn descriptor_variable(&mut self, w: &Word) {
        let Some(inner) = w.raw.strip_prefix('{').and_then(|r| r.strip_suffix('}')) else {
            return;
        };
        let (name, subscript) = match inner.split_once('[') {
            Some((n, _)) => (n, true),
            None => (inner, false),
        };
        let identifier = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !identifier {
            return;
        }
        if subscript {
            self.raise(
                ShellComplex,
                format!(
                    "`{}` next to a redirection evaluates the subscript, which can run commands",
                    w.raw
                ),
            );
        } else {
            self.assignment_name(name, "a `{NAME}` redirection sets");
        }
    }

    /// `unset NAME`: taking a variable away changes what later commands do as surely as
    /// setting it (`unset PATH; ls` runs `./ls`; unsetting a variable the sandbox sets takes a
    /// protection away), so each name must be one a command may set. `unset -f` names
    /// functions.
    fn unset(&mut self, decl: &shell::Declaration) {
        let functions = decl
            .args
            .iter()
            .any(|a| a.is_static() && a.value.starts_with('-') && a.value.contains('f'));
        for arg in &decl.args {
            // The grammar gives a bare name as a `variable_name`, which the word reader leaves
            // unread: its text is the name.
            let plain = !arg.raw.is_empty()
                && arg
                    .raw
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            let name = match (arg.is_static(), plain) {
                (true, _) => arg.value.as_str(),
                (false, true) => arg.raw.as_str(),
                (false, false) => {
                    self.raise(
                        ShellComplex,
                        format!("`unset` takes `{}`, known only at run time", arg.raw),
                    );
                    continue;
                }
            };
            if !name.starts_with('-') && !functions {
                self.assignment_name(name, "`unset` removes");
            }
        }
    }

    /// A variable handed to programs in their environment (`NAME=v cmd`, `env NAME=v`,
    /// `export NAME`): harmless only when the list of harmless environment names has it.
    pub fn env_assignment(&mut self, name: &str, verb: &str) {
        if !env_names::harmless_env(name) {
            self.raise(
                ShellComplex,
                format!(
                    "{verb} `{name}` in a program's environment, and only listed names are known \
                     not to change what programs run or how they read their arguments"
                ),
            );
        }
    }

    /// Reading is opening: any command or redirection that opens the watchdog arms it, and
    /// opening most other devices acts too (a tape rewinds on close, a tray closes, a terminal
    /// or input device gives another person's keystrokes).
    fn watchdog(&mut self, w: &Word) {
        self.device_open(w);
    }

    /// A relative path an argument or a redirection names, after a `cd` out of the workspace:
    /// it is opened there (`cd /dev && cat watchdog`).
    fn read_after_cd(&mut self, w: &Word) {
        if w.value.starts_with('/') || w.value.is_empty() {
            return;
        }
        let (dirs, unfixed) = self.cd_dirs.clone();
        for d in dirs {
            let joined = format!("{}/{}", d.trim_end_matches('/'), w.value);
            let mut there = w.clone();
            there.value = joined.clone();
            if w.glob {
                there.pattern = format!("{}/{}", d.trim_end_matches('/'), w.pattern);
            }
            self.device_open(&there);
        }
        if unfixed && !w.value.starts_with('-') {
            self.raise(
                ShellComplex,
                format!(
                    "reads `{}` after a `cd` to a directory the command does not fix, where it \
                     may name any file, a device whose opening acts included",
                    w.value
                ),
            );
        }
    }

    /// The device `w` opens, if any, raised.
    fn device_open(&mut self, w: &Word) {
        match paths::opens_device(w) {
            Some(paths::DeviceOpen::Watchdog) => self.raise(
                Dangerous,
                format!(
                    "opens `{}`, the hardware watchdog (or may, as a pattern): on a real host the \
                     machine reboots unless something keeps writing to it",
                    w.value
                ),
            ),
            Some(paths::DeviceOpen::Acting) => self.raise(
                ShellComplex,
                format!(
                    "opens `{}`, a device whose opening may act (only /dev/null, zero, full, \
                     random, urandom, tty, stdin, stdout, stderr and fd/N are known not to)",
                    w.value
                ),
            ),
            None => {}
        }
    }

    pub(crate) fn network_device(&mut self, target: &Word) {
        self.a.network = true;
        self.raise(
            Dangerous,
            format!(
                "opens `{}`, a raw network connection (the reverse-shell pattern)",
                target.value
            ),
        );
    }

    /// Record a write of `target` by `who` and judge where it lands.
    pub fn write_target(&mut self, target: &Word, who: &str, kind: WriteKind) {
        let root = self.config.workspace_root.as_deref();
        let mut scope = paths::scope(target, root);
        if let Some(cwd) = &self.cwd
            && scope == Scope::Inside
            && !target.value.starts_with('/')
        {
            scope = cwd.clone();
        }
        let shown = if target.dynamic {
            target.raw.as_str()
        } else {
            target.value.as_str()
        };
        // Only a redirection may write a sink harmlessly (`redirect_target`): a writer given one
        // acts on the device node itself (`rm /dev/null`, `chmod 000 /dev/null`), a device
        // write. Given `/dev/stdout` or `/dev/fd/N` it acts on the link or on whatever file the
        // descriptor holds, which a writer's words do not tell (`tee /dev/stderr` only copies
        // output, `rm /dev/stdout` unlinks the link): never read-only, not by itself DANGEROUS.
        if kind == WriteKind::Mentioned && matches!(scope, Scope::Harmless | Scope::Descriptor(_)) {
            return;
        }
        if scope == Scope::Harmless {
            scope = Scope::Device;
        }
        if let Scope::Descriptor(fd) = scope {
            self.raise(
                ShellComplex,
                format!(
                    "{who} writes `{shown}` by name: the file behind descriptor {fd}, or the link itself"
                ),
            );
            self.a.add_write(shown);
            return;
        }
        match scope {
            Scope::NetworkDevice => return self.network_device(target),
            Scope::Device | Scope::System if kind != WriteKind::Mentioned => {
                let what = if scope == Scope::Device {
                    "a device"
                } else {
                    "a system path"
                };
                self.raise(Dangerous, format!("{who} writes `{shown}`, {what}"));
            }
            Scope::Unknown if kind == WriteKind::Recursive => {
                self.raise(
                    Dangerous,
                    format!(
                        "{who} acts recursively on `{shown}`, whose `..` follows a name that may be a link, so where it lands is unknown"
                    ),
                );
            }
            Scope::Unknown => {
                self.raise(
                    ShellComplex,
                    format!(
                        "{who} writes `{shown}`, whose `..` follows a name that may be a link, so where it lands is unknown"
                    ),
                );
            }
            Scope::Home | Scope::Outside if kind == WriteKind::Recursive => {
                self.raise(
                    Dangerous,
                    format!("{who} acts recursively on `{shown}`, outside the workspace"),
                );
            }
            Scope::Dynamic if kind == WriteKind::Recursive && expands_to_root(target) => {
                self.raise(
                    Dangerous,
                    format!(
                        "{who} acts recursively on `{shown}`, which is under `/` when the variable is empty or unset"
                    ),
                );
            }
            Scope::Dynamic if kind == WriteKind::Recursive && self.starts_unknown(target) => {
                self.raise(
                    Dangerous,
                    format!(
                        "{who} acts recursively on `{shown}`, which starts with an expansion this command does not set from a literal or `mktemp`, so it may name any directory"
                    ),
                );
            }
            Scope::Dynamic if kind == WriteKind::Recursive => {
                self.raise(
                    ShellComplex,
                    format!("{who} acts recursively on `{shown}`, known only at run time"),
                );
                // `VAR=/; rm -rf "$VAR"`: each literal the line gives the variable is judged as
                // if written in its place.
                for value in self.literal_values(target) {
                    self.write_target(&Word::literal(&value), who, kind);
                }
            }
            Scope::Dynamic => {
                self.raise(
                    ShellComplex,
                    format!("{who} writes `{shown}`, a path known only at run time"),
                );
            }
            Scope::Home | Scope::Outside => {
                self.raise(
                    WorkspaceMutating,
                    format!("{who} writes `{shown}`, outside the workspace"),
                );
            }
            _ => {
                let class = if kind == WriteKind::Mentioned {
                    ShellComplex
                } else {
                    WorkspaceMutating
                };
                self.raise(class, format!("{who} writes `{shown}`"));
            }
        }
        self.a.add_write(shown);
    }

    /// One simple command from the parse: its assignments, then the command itself.
    fn simple(&mut self, cmd: &SimpleCommand) {
        for asg in &cmd.assignments {
            self.env_assignment(&asg.name, "the command sets");
        }
        for arg in std::iter::once(&cmd.name).chain(cmd.args.iter()) {
            if arg.value.contains("/dev/tcp/") || arg.value.contains("/dev/udp/") {
                self.network_device(arg);
            }
        }
        let moves = matches!(cmd.name.value.as_str(), "cd" | "pushd" | "popd");
        if !moves {
            for w in &cmd.args {
                self.read_after_cd(w);
            }
        }
        for w in std::iter::once(&cmd.name).chain(cmd.args.iter()) {
            self.watchdog(w);
            // Whether a redirection follows is not asked: the grammar may have hung it on the
            // enclosing statement (`true && ls {a[…]}>f`).
            self.descriptor_variable(w);
        }
        let (name, args) = expand_braces(&cmd.name, &cmd.args, self.budget);
        self.command(&name, &args);
    }

    /// Classify `name args` (a parsed command or one a wrapper runs).
    pub fn command(&mut self, name: &Word, args: &[Word]) {
        let Some(key) = self.executable(name) else {
            // An unquoted expansion in command position can expand to nothing, and then the next
            // word is the command: `$EMPTY rm -rf /` runs rm.
            if name.dynamic && !name.raw.starts_with(['"', '\'']) {
                self.wrapped(args);
            }
            return;
        };
        self.rules(&key, args);
    }

    /// Run a wrapped command (`nice CMD`, `xargs CMD`), bounded in depth.
    pub fn wrapped(&mut self, argv: &[Word]) {
        let Some((name, args)) = argv.split_first() else {
            return;
        };
        self.wrappers += 1;
        if self.wrappers > MAX_WRAPPERS {
            self.raise(
                Dangerous,
                format!("more than {MAX_WRAPPERS} wrappers deep, too deep to check"),
            );
        } else {
            self.command(name, args);
        }
        self.wrappers -= 1;
    }

    /// The rule key for a command name; None (after raising) when the name is not static.
    fn executable(&mut self, name: &Word) -> Option<String> {
        if name.dynamic {
            self.a.add_executable(&name.raw);
            self.raise(
                ShellComplex,
                format!("the command name `{}` is known only at run time", name.raw),
            );
            return None;
        }
        let v = name.value.as_str();
        if v.is_empty() {
            self.raise(ShellComplex, "the command name is empty");
            return None;
        }
        if let Some((dir, base)) = v.rsplit_once('/') {
            let dir = if dir.is_empty() { "/" } else { dir };
            if tables::SYSTEM_BIN_DIRS.contains(&dir) && !base.is_empty() {
                self.a.add_executable(base);
                return Some(base.to_string());
            }
            self.a.add_executable(v);
            self.raise(ShellComplex, format!("runs the program `{v}` by its path"));
            return None;
        }
        self.a.add_executable(v);
        Some(v.to_string())
    }

    fn cross_command_rules(&mut self) {
        let f = self.facts;
        self.piped_downloads();
        let tainted = self.tainted_vars();
        for c in &f.commands {
            // Through wrappers too: `time bash <(curl …)`, `nice eval "$(wget …)"`.
            let (name, args) = wrappers::innermost(&c.name, &c.args);
            if name.dynamic {
                continue;
            }
            let key = base_name(&name.value);
            self.runs_downloaded(c, key, args, &tainted);
            // A here-string fed to a shell is a script.
            if tables::SHELLS.contains(&key) && invocations::stdin_program(name, args).is_some() {
                for r in c
                    .redirects
                    .iter()
                    .filter(|r| r.kind == RedirectKind::HereString)
                {
                    if let Some(t) = r.target.as_ref().filter(|t| t.is_static()) {
                        self.nested_script(&t.value.clone());
                    }
                }
            }
        }
        self.kills_by_lookup();
        self.heredoc_feeds();
        self.downloaded_then_run();
    }

    /// `kill $(pidof sshd)`, `pgrep x | xargs kill`: killing the processes a lookup by name finds
    /// is killing by name, which reaches beyond the sandbox like `pkill`.
    fn kills_by_lookup(&mut self) {
        const LOOKUPS: &[&str] = &["pidof", "pgrep", "ps", "lsof", "fuser"];
        let f = self.facts;
        let lookup = |c: &SimpleCommand| {
            let (name, _) = wrappers::innermost(&c.name, &c.args);
            (!name.dynamic && LOOKUPS.contains(&base_name(&name.value)))
                .then(|| base_name(&name.value).to_string())
        };
        let is_kill = |c: &SimpleCommand| {
            let (name, _) = wrappers::innermost(&c.name, &c.args);
            !name.dynamic && base_name(&name.value) == "kill"
        };
        let mut found: Option<String> = None;
        for c in f.commands.iter().filter(|c| is_kill(c)) {
            let (_, args) = wrappers::innermost(&c.name, &c.args);
            found = found.or_else(|| {
                args.iter()
                    .flat_map(|a| a.substitutions.iter())
                    .find_map(|i| lookup(&f.commands[*i]))
            });
        }
        for stages in &f.pipelines {
            let mut seen: Option<String> = None;
            for stage in stages {
                let commands = &f.commands[stage.clone()];
                if seen.is_some() && commands.iter().any(is_kill) {
                    found = found.or_else(|| seen.clone());
                }
                seen = seen.or_else(|| commands.iter().find_map(lookup));
            }
        }
        if let Some(by) = found {
            self.raise(
                Dangerous,
                format!("`kill` signals the processes `{by}` finds by name, which reaches beyond the sandbox"),
            );
        }
    }

    /// A here-document whose reader is a shell (directly or through a pipeline) is a script.
    fn heredoc_feeds(&mut self) {
        let f = self.facts;
        for doc in &f.heredocs {
            let Some(start) = doc.command_start else {
                continue;
            };
            let holders: Vec<usize> = (0..f.commands.len())
                .filter(|i| f.commands[*i].span.start == start)
                .collect();
            let mut readers: Vec<usize> = holders.clone();
            for stages in &f.pipelines {
                if let Some(pos) = stages
                    .iter()
                    .position(|s| holders.iter().any(|h| s.contains(h)))
                {
                    for later in &stages[pos + 1..] {
                        readers.extend(later.clone());
                    }
                }
            }
            for r in readers {
                let c = &f.commands[r];
                match invocations::stdin_program(&c.name, &c.args) {
                    Some(invocations::Program::Shell) => {
                        self.raise(
                            ShellComplex,
                            format!("a here-document is run as a script by `{}`", c.name.value),
                        );
                        self.nested_script(&doc.body.clone());
                    }
                    Some(invocations::Program::Code) => {
                        self.raise(
                            ShellComplex,
                            format!("a here-document is run as a program by `{}`", c.name.value),
                        );
                        for p in scripts::mentioned_paths(&doc.body) {
                            self.write_target(
                                &Word::literal(&p),
                                "the here-document program",
                                WriteKind::Mentioned,
                            );
                        }
                    }
                    None => {}
                }
            }
        }
    }
}

/// Where each `cd`/`pushd` in the line moves the shell, and each `env -C` the command it runs:
/// the target word, `None` for home. `command cd /`, `builtin cd /` and `time cd /` move the
/// shell too.
fn moves(f: &ShellFacts) -> Vec<Option<Word>> {
    let mut out = Vec::new();
    for c in &f.commands {
        for (name, args) in wrappers::layers(&c.name, &c.args) {
            if name.dynamic {
                continue;
            }
            match name.value.as_str() {
                "cd" | "pushd" => out.push(
                    args.iter()
                        .find(|a| !a.value.starts_with('-') || a.value == "-")
                        .cloned(),
                ),
                "env" => {
                    if let Some(d) = super::env_args::EnvArgs::parse(args).chdir {
                        out.push(Some(d));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The worst place a `cd`/`pushd` in the line moves to, when that is not inside the workspace.
fn directory_changes(f: &ShellFacts, root: Option<&std::path::Path>) -> Option<Scope> {
    let rank = |s: &Scope| match s {
        Scope::Inside => 0,
        Scope::Outside => 1,
        Scope::Dynamic => 2,
        Scope::Home => 3,
        _ => 4,
    };
    let mut worst: Option<Scope> = None;
    for target in moves(f) {
        let scope = match target {
            None => Scope::Home,
            Some(t) if t.value == "-" => Scope::Dynamic,
            Some(t) => place_of_directory(paths::scope(&t, root)),
        };
        if rank(&scope) > worst.as_ref().map_or(0, rank) {
            worst = Some(scope);
        }
    }
    worst
}

/// The directories outside the workspace the line moves to, written as absolute literal
/// paths, and whether one it moves to is not fixed by the line (an expansion, `cd -`, a
/// relative path that climbs out). A move inside the workspace, or home, is neither.
fn directories_moved_to(f: &ShellFacts, root: Option<&std::path::Path>) -> (Vec<String>, bool) {
    let mut dirs = Vec::new();
    let mut unfixed = false;
    for t in moves(f).into_iter().flatten() {
        if t.value == "-" {
            unfixed = true;
            continue;
        }
        let scope = paths::scope(&t, root);
        if scope == Scope::Inside || scope == Scope::Home {
            continue;
        }
        if !t.dynamic && t.value.starts_with('/') {
            dirs.push(t.value.clone());
        } else {
            unfixed = true;
        }
    }
    (dirs, unfixed)
}

/// A directory that is a sink or a descriptor (`cd /dev/fd/3`) is no place a relative path can
/// be judged in.
fn place_of_directory(scope: Scope) -> Scope {
    match scope {
        Scope::Harmless | Scope::Descriptor(_) => Scope::Unknown,
        other => other,
    }
}

impl Cx<'_> {
    /// Does the path start with an expansion whose value this command does not fix
    /// (`"$VAR"`, `"$(dirname "$0")"/../..`, `$1`, `${X:-/}`)? Such a path may name any
    /// directory. A plain `$NAME` is fixed when one assignment of NAME standing in the line
    /// before the command and every other anywhere in it (a loop runs a later one first on its
    /// next pass) gives it a literal or `$(mktemp …)` (`d=$(mktemp -d); …; rm -rf "$d"`); an
    /// assignment after the command is no help, the command sees the value it inherits. `PWD` is
    /// where the command runs. A prefix assignment (`X=1 rm -rf "$X"`) does not count: bash
    /// expands the words before it applies it. A path with a literal start (`build/$x`) is
    /// judged by the caller as a run-time path.
    fn starts_unknown(&self, target: &Word) -> bool {
        let raw = target.raw.trim_start_matches('"');
        let Some(rest) = raw.strip_prefix('$') else {
            return raw.starts_with('`');
        };
        let name = match rest.strip_prefix('{') {
            Some(braced) => match braced.split_once('}') {
                Some((n, _)) => n,
                None => return true,
            },
            None => {
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                &rest[..end]
            }
        };
        let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !plain {
            return true;
        }
        if name == "PWD" {
            // Where the command runs, unless the line moves it or sets PWD itself.
            return self.cwd.is_some() || self.assigned(name);
        }
        !self.fixed_variable(name)
    }

    /// The literal values the line assigns to the variable a word is exactly (`"$VAR"`,
    /// `${VAR}`); none for any other word.
    fn literal_values(&self, target: &Word) -> Vec<String> {
        let raw = target.raw.as_str();
        let raw = raw
            .strip_prefix('"')
            .and_then(|r| r.strip_suffix('"'))
            .unwrap_or(raw);
        let Some(name) = raw.strip_prefix('$') else {
            return Vec::new();
        };
        let name = name
            .strip_prefix('{')
            .and_then(|n| n.strip_suffix('}'))
            .unwrap_or(name);
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Vec::new();
        }
        let f = self.facts;
        f.assignments
            .iter()
            .chain(f.declarations.iter().flat_map(|d| d.assignments.iter()))
            .filter(|a| a.name == name)
            .filter_map(|a| a.value.as_ref())
            .filter(|v| !v.dynamic && !v.value.is_empty())
            .map(|v| v.value.clone())
            .collect()
    }

    /// Might the line assign `name` anywhere: standing alone, in a declaration, leading a
    /// command, or as a word a wrapper may read as an assignment (`time NAME=v` sets it in the
    /// shell)? Any word starting `NAME=` counts.
    fn assigned(&self, name: &str) -> bool {
        let f = self.facts;
        let as_word = format!("{name}=");
        f.assignments
            .iter()
            .chain(f.declarations.iter().flat_map(|d| d.assignments.iter()))
            .chain(f.commands.iter().flat_map(|c| c.assignments.iter()))
            .any(|a| a.name == name)
            || f.commands
                .iter()
                .flat_map(|c| std::iter::once(&c.name).chain(c.args.iter()))
                .any(|w| w.value.starts_with(&as_word))
    }

    /// Every assignment of `name` standing in the line (`x=…`, `local x=…`) sets a literal or
    /// the output of `mktemp`, and one of them surely ran, in the command's own shell, before
    /// it: it comes first in text order and its scope encloses the command's (not in a
    /// subshell, pipeline stage, background job, substitution, function, loop or branch the
    /// command is not also in). `${x:=…}` and loop variables take values that are not known
    /// here, and fix nothing.
    fn fixed_variable(&self, name: &str) -> bool {
        let f = self.facts;
        let Some(command) = f.commands.get(self.current) else {
            return false;
        };
        let all: Vec<&Assignment> = f
            .assignments
            .iter()
            .chain(f.declarations.iter().flat_map(|d| d.assignments.iter()))
            .filter(|a| a.name == name)
            .collect();
        let surely_before = |a: &&Assignment| {
            a.value.is_some()
                && a.after_commands <= self.current
                && a.scope.encloses(&command.scope)
        };
        all.iter().any(surely_before)
            && all.iter().all(|a| match &a.value {
                None => false,
                Some(v) if !v.dynamic => true,
                Some(v) => is_mktemp(&v.raw),
            })
    }
}

/// `$(mktemp …)` or `` `mktemp …` ``, quoted or not, and nothing else: one command, no list,
/// pipe, redirection or command substitution that could change what it prints. Its arguments
/// may expand (`mktemp -d "${TMPDIR:-/tmp}/x.XXXX"`): whatever they are, mktemp prints a name
/// it has just made.
fn is_mktemp(raw: &str) -> bool {
    let raw = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .unwrap_or(raw);
    let body = raw
        .strip_prefix("$(")
        .and_then(|r| r.strip_suffix(')'))
        .or_else(|| raw.strip_prefix('`').and_then(|r| r.strip_suffix('`')));
    body.is_some_and(|b| {
        let b = b.trim();
        (b == "mktemp" || b.starts_with("mktemp "))
            && !b.contains([';', '|', '&', '<', '>', '\n', '`', '(', ')'])
    })
}

/// `"$DIR"/*`, `$X/`, `${X}/x`: a path that starts with a variable and a slash is `/…` when the
/// variable is empty. `${X:?}` stops the command instead, and bash always sets `PWD`.
fn expands_to_root(target: &Word) -> bool {
    let raw = target.raw.strip_prefix('"').unwrap_or(&target.raw);
    let Some(rest) = raw.strip_prefix('$') else {
        return false;
    };
    let (name, after) = match rest.strip_prefix('{') {
        Some(braced) => match braced.split_once('}') {
            Some((n, a)) => (n, a),
            None => return false,
        },
        None => {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            rest.split_at(end)
        }
    };
    let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let after = after.strip_prefix('"').unwrap_or(after);
    plain && name != "PWD" && after.starts_with('/')
}

/// Apply bash brace expansion to a command's words (`{rm,-rf,/}` is `rm -rf /`).
fn expand_braces(name: &Word, args: &[Word], budget: &Budget) -> (Word, Vec<Word>) {
    const LIMIT: usize = 64;
    let mut words: Vec<Word> = Vec::with_capacity(args.len() + 1);
    for w in std::iter::once(name).chain(args.iter()) {
        let expanded = if w.brace {
            w.brace_expansion_within(LIMIT, budget)
        } else {
            None
        };
        match expanded.filter(|v| v.len() > 1) {
            Some(expanded) => words.extend(expanded.iter().map(|e| {
                let mut x = Word::literal(e);
                x.raw = w.raw.clone();
                x.dynamic = w.expands || w.glob || w.tilde;
                x.glob = w.glob;
                x.substitutions = w.substitutions.clone();
                x
            })),
            None => words.push(w.clone()),
        }
    }
    let mut it = words.into_iter();
    let first = it.next().unwrap_or_else(|| name.clone());
    (first, it.collect())
}

#[cfg(test)]
mod tests {
    use super::is_mktemp;

    #[test]
    fn mktemp_alone_fixes_a_name() {
        for ok in [
            "$(mktemp -d)",
            "\"$(mktemp -d)\"",
            "`mktemp`",
            "$(mktemp -d \"${TMPDIR:-/tmp}/x.XXXX\")",
        ] {
            assert!(is_mktemp(ok), "{ok}");
        }
        for bad in [
            "$(mktemp -d; echo /)",
            "$(mktemp -d)/..",
            "$(mktemp -d | sed s/x/y/)",
            "$(mktemp $(pwd))",
            "$(mktempx)",
            "$(echo /)",
            "/tmp/x",
        ] {
            assert!(!is_mktemp(bad), "{bad}");
        }
    }
}
