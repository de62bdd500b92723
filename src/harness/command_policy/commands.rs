//! Rules for one executable: the allow-list first, then what the classifier knows by name
//! (privilege, disks, writers, builds, network, git and downloads in their own modules, sed,
//! find), and unknown last. The last arm
//! is the default deny: a name nobody listed is SHELL_COMPLEX.

use super::allowlist;
use super::assessment::CommandClass::{Dangerous, ReadOnly, ShellComplex, WorkspaceMutating};
use super::classify::{Cx, WriteKind};
use super::git::first_operand_after_globals;
use super::options::{self, OptionSyntax};
use super::paths;
use super::scripts;
use super::tables;
use super::wrappers;
use crate::harness::shell::Word;

/// GNU tar options that take a value.
const TAR_VALUES: &[&str] = &[
    "-f",
    "--file",
    "-C",
    "--directory",
    "-T",
    "--files-from",
    "-X",
    "--exclude-from",
    "-g",
    "--listed-incremental",
    "-b",
    "--blocking-factor",
    "-L",
    "--tape-length",
    "-N",
    "--newer",
    "-V",
    "--label",
    "-H",
    "--format",
    "-F",
    "--info-script",
    "-K",
    "--starting-file",
];

impl Cx<'_> {
    pub(crate) fn rules(&mut self, key: &str, args: &[Word]) {
        if self.dangerous_by_name(key, args) {
            return;
        }
        self.network_by_name(key, args);
        match allowlist::lookup(key, args) {
            Some(Ok(network)) => self.a.network |= network,
            Some(Err(why)) => {
                if key == "find" && self.find_running_readers(args) {
                    return;
                }
                // A read-only program given an output file (`sort -o out`, `uniq in out`) is a
                // writer of that file and nothing more, when the rest is read-only.
                if let Some((targets, rest)) = output_file(key, args)
                    && matches!(allowlist::lookup(key, &rest), Some(Ok(_)))
                {
                    for t in &targets {
                        self.write_target(t, &format!("`{key}`'s output option"), WriteKind::Plain);
                    }
                    return;
                }
                // The allow-list knows this program and says this use is not read-only: when no
                // rule by name finds more to say, it is at least SHELL_COMPLEX, never READ_ONLY.
                let findings = self.a.reasons.len();
                self.specific(key, args, Some(why.clone()));
                if self.a.reasons.len() == findings {
                    self.raise(ShellComplex, why);
                }
            }
            None => self.specific(key, args, None),
        }
    }

    /// Privilege, disks, power, system changes, killing outside the sandbox.
    fn dangerous_by_name(&mut self, key: &str, args: &[Word]) -> bool {
        let reason = if tables::PRIVILEGE.contains(&key) {
            Some(format!("`{key}` runs commands with other privileges"))
        } else if tables::DISK.contains(&key) || key.starts_with("mkfs") {
            Some(format!("`{key}` formats, partitions or rewrites disks"))
        } else if tables::POWER.contains(&key)
            || (key == "init" && args.iter().any(|a| ["0", "6"].contains(&a.value.as_str())))
            || (key == "systemctl"
                && args.iter().any(|a| {
                    [
                        "poweroff",
                        "reboot",
                        "halt",
                        "kexec",
                        "suspend",
                        "hibernate",
                    ]
                    .contains(&a.value.as_str())
                }))
        {
            Some(format!("`{key}` stops or restarts the machine"))
        } else if let Some(sub) = service_change(key, args) {
            Some(format!(
                "`{key} {sub}` starts, stops or reconfigures system services"
            ))
        } else if let Some(why) = container_with_host_access(key, args) {
            Some(format!("`{key}` {why}, which hands it the host"))
        } else if tables::SYSTEM_CHANGE.contains(&key) {
            Some(format!("`{key}` changes the system outside any workspace"))
        } else if tables::KILL_BY_NAME.contains(&key) {
            Some(format!(
                "`{key}` kills processes by name, which reaches beyond the sandbox"
            ))
        } else if key == "kill" && kills_everything(args) {
            Some("`kill` aimed at every process (`-1`) or at init".to_string())
        } else {
            None
        };
        match reason {
            Some(r) => {
                self.raise(Dangerous, r);
                true
            }
            None => false,
        }
    }

    fn network_by_name(&mut self, key: &str, args: &[Word]) {
        if tables::ALWAYS_NETWORK.contains(&key) {
            self.a.network = true;
            return;
        }
        if key == "rsync" {
            if args.iter().any(|a| is_remote(&a.value)) {
                self.a.network = true;
            }
            return;
        }
        let sub = if key == "git" {
            first_operand_after_globals(args)
        } else {
            first_operand(args)
        };
        let listed = tables::NETWORK_SUBCOMMANDS
            .iter()
            .chain(tables::SYSTEM_PACKAGES.iter())
            .find(|(n, _)| *n == key);
        // `git remote` and `git remote -v` only list what the config names; its subcommands
        // (`show`, `update`, `prune`, …) are what reach a remote.
        let lists_remotes = key == "git"
            && sub == Some("remote")
            && args
                .iter()
                .skip_while(|a| a.value != "remote")
                .skip(1)
                .all(|a| a.value.starts_with('-') && a.is_static());
        if let (Some((_, subs)), Some(sub)) = (listed, sub)
            && subs.contains(&sub)
            && !lists_remotes
        {
            self.a.network = true;
        }
        if tables::is_python(key) {
            // `python -m pip install …`
            let v: Vec<&str> = args.iter().map(|a| a.value.as_str()).collect();
            if let Some(p) = v.iter().position(|a| *a == "-m")
                && v.get(p + 1) == Some(&"pip")
                && v.get(p + 2)
                    .is_some_and(|s| ["install", "download"].contains(s))
            {
                self.a.network = true;
            }
        }
    }

    /// Rules by name for commands that the allow-list does not take as read-only.
    fn specific(&mut self, key: &str, args: &[Word], listed_but: Option<String>) {
        match key {
            "eval" => self.eval(args),
            "source" | "." => self.raise(
                ShellComplex,
                format!("`{key}` runs a script file in this shell"),
            ),
            "trap" => self.trap(args),
            "sed" | "gsed" => self.sed(key, args, listed_but),
            "find" => self.find(args, listed_but),
            "git" => self.git(args, listed_but),
            "dd" => self.dd(args),
            "chmod" | "chown" | "chgrp" => self.permissions(key, args),
            "kill" => self.raise(ShellComplex, "`kill` signals processes"),
            "jobs" => self.jobs(args, listed_but),
            "curl" | "wget" => self.download(key, args),
            "patch" => self.patch(args),
            "nc" | "ncat" | "netcat" | "socat" => self.netcat(key, args),
            "ssh" => self.ssh(args),
            k if tables::SHELLS.contains(&k) => self.shell(k, args),
            k if tables::AWKS.contains(&k) => self.awk(k, args),
            k if tables::WRAPPERS.contains(&k) => self.wrapper(k, args),
            k if tables::interpreter(k).is_some() => self.interpreter(k, args),
            k if tables::OPERAND_WRITERS.iter().any(|(n, _)| *n == k) => {
                self.operand_writer(k, args)
            }
            k if tables::DESTINATION_WRITERS.iter().any(|(n, _)| *n == k) => {
                self.destination_writer(k, args)
            }
            k if tables::SYSTEM_PACKAGES.iter().any(|(n, _)| *n == k) => {
                self.raise(ShellComplex, format!("`{k}` manages system packages"))
            }
            k if tables::ARCHIVERS.contains(&k) => {
                let parsed = options::parse(args, OptionSyntax::gnu(TAR_VALUES));
                if k == "tar"
                    && (parsed.has("-t") || parsed.has("--list"))
                    && let Some(why) = &listed_but
                {
                    // A listing given more than the listing options (`--volno-file`, a remote
                    // `-f host:file` read through rsh) runs or writes what it names.
                    self.raise(ShellComplex, why.clone());
                }
                self.raise(
                    WorkspaceMutating,
                    format!("`{k}` creates or extracts files"),
                );
                self.archive_directory(k, args);
            }
            k if tables::BUILDS.contains(&k) => self.raise(
                WorkspaceMutating,
                format!("`{k}` runs the project's build or tools, which can change the workspace"),
            ),
            k => {
                let why = listed_but.unwrap_or_else(|| {
                    format!("`{k}` is not on the read-only allow-list, so what it does is unknown")
                });
                self.raise(ShellComplex, why);
            }
        }
    }

    /// bash's `jobs -x COMMAND ARGS` runs COMMAND with each job spec in ARGS replaced by its
    /// process group id: a wrapper, so what it runs is judged as if written directly.
    fn jobs(&mut self, args: &[Word], listed_but: Option<String>) {
        let options = args
            .iter()
            .take_while(|a| a.dynamic || (a.value.starts_with('-') && a.value != "--"));
        if options.clone().any(|a| a.dynamic) {
            self.raise(
                ShellComplex,
                "`jobs` takes an option known only at run time, which may be `-x`",
            );
        }
        if options.clone().any(|a| a.value.contains('x')) {
            self.raise(
                ShellComplex,
                "`jobs -x` runs a command with job specs replaced by process group ids",
            );
            if let Some(i) = wrappers::skip_options(args, &[]).filter(|i| *i < args.len()) {
                self.wrapped(&args[i..]);
            }
            return;
        }
        let why = listed_but.unwrap_or_else(|| "`jobs` is given options it does not list".into());
        self.raise(ShellComplex, why);
    }

    fn eval(&mut self, args: &[Word]) {
        self.raise(
            ShellComplex,
            "`eval` runs its arguments as a new command line",
        );
        if args.iter().all(Word::is_static) {
            let script = args
                .iter()
                .map(|a| a.value.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            self.nested_script(&script);
        }
    }

    fn trap(&mut self, args: &[Word]) {
        self.raise(ShellComplex, "`trap` sets a command to run on a signal");
        if let Some(action) = args.iter().find(|a| !a.value.starts_with('-'))
            && action.is_static()
        {
            self.nested_script(&action.value.clone());
        }
    }

    fn sed(&mut self, key: &str, args: &[Word], listed_but: Option<String>) {
        let syntax = OptionSyntax {
            with_value: &["-e", "--expression", "-f", "--file", "-l", "--line-length"],
            optional_attached: &["-i"],
            single_dash: false,
            options_first: false,
        };
        let parsed = options::parse(args, syntax);
        let scripts_given = !parsed.has("-e") && !parsed.has("--expression");
        if parsed.has("-f") || parsed.has("--file") {
            self.raise(
                ShellComplex,
                format!("`{key} -f` runs a script from a file"),
            );
        }
        let mut wrote = false;
        for script in allowlist::sed_scripts(&parsed) {
            let facts = scripts::sed_script(&script);
            if facts.executes {
                self.raise(
                    ShellComplex,
                    format!("the `{key}` script `{script}` runs shell commands"),
                );
            }
            for w in &facts.writes {
                wrote = true;
                self.write_target(
                    &Word::literal(w),
                    &format!("the `{key}` script"),
                    WriteKind::Plain,
                );
            }
            if let Some(u) = &facts.unknown {
                self.raise(
                    ShellComplex,
                    format!("the `{key}` script has {u}, which Spear cannot read"),
                );
            }
        }
        let files = parsed.operands.iter().skip(usize::from(scripts_given));
        if parsed.has("-i") || parsed.has("--in-place") {
            for f in files {
                self.write_target(f, &format!("`{key} -i`"), WriteKind::Plain);
            }
        } else if let Some(why) = listed_but.filter(|_| !wrote) {
            self.raise(ShellComplex, why);
        }
    }

    /// `find … -exec CMD ARGS {} +` (or `\;`, or `-execdir`) is read-only when the rest of the
    /// `find` is and each `CMD ARGS FILE` is, for a file under each starting point: `{}` is
    /// then always a whole argument that starts where a starting point does, so never an
    /// option. A `{}` inside a larger word (`sh -c 'cat {}'`) puts a file name into code, and
    /// `-ok` asks a terminal: those stay SHELL_COMPLEX. Folds the judgement in only when it
    /// says read-only; otherwise the caller judges the line as before.
    fn find_running_readers(&mut self, args: &[Word]) -> bool {
        let roots = find_roots(args);
        let starts: Vec<Word> = if roots.is_empty() {
            vec![Word::literal(".")]
        } else {
            roots.iter().map(|w| (*w).clone()).collect()
        };
        let mut rest: Vec<Word> = Vec::new();
        let mut runs: Vec<(bool, &[Word])> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let v = args[i].value.as_str();
            if !matches!(v, "-exec" | "-execdir") || i < roots.len() {
                rest.push(args[i].clone());
                i += 1;
                continue;
            }
            let Some(end) = args[i + 1..]
                .iter()
                .position(|a| a.value == ";" || a.value == "+")
                .map(|p| i + 1 + p)
            else {
                return false;
            };
            let argv = &args[i + 1..end];
            let whole = |a: &Word| a.value == "{}" || !a.value.contains("{}");
            if argv.is_empty() || argv[0].value.contains("{}") || !argv.iter().all(whole) {
                return false;
            }
            runs.push((v == "-execdir", argv));
            i = end + 1;
        }
        if runs.is_empty() || !matches!(allowlist::lookup("find", &rest), Some(Ok(false))) {
            return false;
        }
        let mut judged = Vec::new();
        for (in_dir, argv) in runs {
            for start in &starts {
                let found = found_file(start, in_dir);
                let argv: Vec<Word> = argv
                    .iter()
                    .map(|a| {
                        if a.value == "{}" {
                            found.clone()
                        } else {
                            a.clone()
                        }
                    })
                    .collect();
                let a = self.apart(|cx| cx.wrapped(&argv));
                if a.class != ReadOnly {
                    return false;
                }
                judged.push(a);
            }
        }
        for a in judged {
            self.a.absorb(a);
        }
        true
    }

    fn find(&mut self, args: &[Word], listed_but: Option<String>) {
        let roots = find_roots(args);
        let mut i = roots.len();
        let mut acted = false;
        while i < args.len() {
            let v = args[i].value.as_str();
            i += 1;
            match v {
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let end = args[i..]
                        .iter()
                        .position(|a| a.value == ";" || a.value == "+")
                        .map_or(args.len(), |p| i + p);
                    self.raise(
                        ShellComplex,
                        format!("`find {v}` runs a command for each file found"),
                    );
                    // `{}` is each file found, so under each starting point.
                    let starts: Vec<Word> = if roots.is_empty() {
                        vec![Word::literal(".")]
                    } else {
                        roots.iter().map(|w| (*w).clone()).collect()
                    };
                    for start in &starts {
                        let argv: Vec<Word> = args[i..end]
                            .iter()
                            .map(|a| {
                                if a.value.contains("{}") {
                                    let mut w = Word::literal(&a.value.replace("{}", &start.value));
                                    w.dynamic = start.dynamic;
                                    w.tilde = start.tilde;
                                    w
                                } else {
                                    a.clone()
                                }
                            })
                            .collect();
                        self.wrapped(&argv);
                    }
                    i = end + 1;
                    acted = true;
                }
                "-delete" => {
                    acted = true;
                    let targets: Vec<Word> = if roots.is_empty() {
                        vec![Word::literal(".")]
                    } else {
                        roots.iter().map(|w| (*w).clone()).collect()
                    };
                    for r in &targets {
                        self.write_target(r, "`find -delete`", WriteKind::Recursive);
                    }
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    acted = true;
                    if let Some(t) = args.get(i) {
                        self.write_target(t, &format!("`find {v}`"), WriteKind::Plain);
                    }
                    i += 1;
                }
                _ => {}
            }
        }
        if !acted && let Some(why) = listed_but {
            self.raise(ShellComplex, why);
        }
    }

    /// The directory an archiver extracts into or works in (`tar -C /etc -x`, `unzip -d /etc`,
    /// `7z x -o/etc`): a write there, judged like any other.
    fn archive_directory(&mut self, key: &str, args: &[Word]) {
        let dir = match key {
            "tar" => {
                let parsed = options::parse(args, OptionSyntax::gnu(TAR_VALUES));
                parsed
                    .values_of("-C")
                    .chain(parsed.values_of("--directory"))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            }
            "unzip" => {
                let parsed = options::parse(args, OptionSyntax::gnu(&["-d", "-x", "-P"]));
                parsed.values_of("-d").map(str::to_string).collect()
            }
            "7z" | "7za" => args
                .iter()
                .filter_map(|a| a.value.strip_prefix("-o"))
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        for d in dir {
            let raw = args.iter().find(|a| a.value.ends_with(&d));
            let mut w = Word::literal(&d);
            w.dynamic = raw.is_some_and(|a| a.dynamic);
            self.write_target(&w, &format!("`{key}` into a directory"), WriteKind::Plain);
        }
    }

    fn dd(&mut self, args: &[Word]) {
        let mut wrote = false;
        for a in args {
            if let Some(target) = a.value.strip_prefix("of=") {
                let mut w = Word::literal(target);
                w.dynamic = a.dynamic;
                w.raw = a.raw.trim_start_matches("of=").to_string();
                self.write_target(&w, "`dd of=`", WriteKind::Plain);
                wrote = true;
            }
        }
        if !wrote {
            self.raise(ShellComplex, "`dd` is not on the read-only allow-list");
        }
    }

    fn permissions(&mut self, key: &str, args: &[Word]) {
        let parsed = options::parse(args, OptionSyntax::gnu(&["--reference", "--from"]));
        let recursive = parsed.has("-R") || parsed.has("--recursive") || parsed.has("-r");
        let has_reference = parsed.has("--reference");
        let mut operands = parsed.operands.iter();
        if !has_reference && let Some(mode) = operands.next() {
            if key == "chmod" && setuid_mode(&mode.value) {
                self.raise(
                    Dangerous,
                    format!("`chmod {}` sets the setuid or setgid bit", mode.value),
                );
                return;
            }
            if key == "chown"
                && (mode.value == "root" || mode.value.starts_with("root:") || mode.value == "0")
            {
                self.raise(Dangerous, "`chown root` hands files to the superuser");
                return;
            }
        }
        self.write_each(key, "-R", recursive, operands.copied());
    }

    fn operand_writer(&mut self, key: &str, args: &[Word]) {
        let parsed = options::parse(
            args,
            OptionSyntax::gnu(values_of(tables::OPERAND_WRITERS, key)),
        );
        let recursive = matches!(key, "rm" | "shred")
            && (parsed.has("-r") || parsed.has("-R") || parsed.has("--recursive"));
        if parsed.operands.is_empty() {
            self.raise(WorkspaceMutating, format!("`{key}` changes files"));
        }
        self.write_each(key, "-r", recursive, parsed.operands.iter().copied());
    }

    /// Each target written by `key`; `flag` names the recursive form in reasons.
    fn write_each<'w>(
        &mut self,
        key: &str,
        flag: &str,
        recursive: bool,
        targets: impl IntoIterator<Item = &'w Word>,
    ) {
        let (kind, who) = if recursive {
            (WriteKind::Recursive, format!("`{key} {flag}`"))
        } else {
            (WriteKind::Plain, format!("`{key}`"))
        };
        for t in targets {
            self.write_target(t, &who, kind);
        }
    }

    fn destination_writer(&mut self, key: &str, args: &[Word]) {
        let parsed = options::parse(
            args,
            OptionSyntax::gnu(values_of(tables::DESTINATION_WRITERS, key)),
        );
        let who = format!("`{key}`");
        let modes = match key {
            "install" => ["-m", "--mode"]
                .iter()
                .flat_map(|o| parsed.values_of(o))
                .collect(),
            "rsync" => parsed.values_of("--chmod").collect(),
            _ => Vec::new(),
        };
        if let Some(mode) = modes.iter().find(|m| setuid_mode(m)) {
            self.raise(
                Dangerous,
                format!("`{key}` gives the files it installs the mode `{mode}`, which sets the setuid or setgid bit"),
            );
            return;
        }
        let directory_mode = key == "install" && (parsed.has("-d") || parsed.has("--directory"));
        let target_dir = parsed
            .value_of("-t")
            .or_else(|| parsed.value_of("--target-directory"));
        let recursive_into = |_: &str| WriteKind::Plain;
        if directory_mode {
            for t in &parsed.operands {
                self.write_target(t, &who, WriteKind::Plain);
            }
        } else if let Some(dir) = target_dir {
            self.write_target(&Word::literal(dir), &who, recursive_into(dir));
        } else if key == "ln" && parsed.operands.len() == 1 {
            self.write_target(&Word::literal("."), &who, WriteKind::Plain);
        } else if let Some(dest) = parsed
            .operands
            .last()
            .filter(|_| parsed.operands.len() >= 2)
        {
            if (key == "scp" || key == "rsync") && is_remote(&dest.value) {
                self.raise(
                    WorkspaceMutating,
                    format!("`{key}` copies files to another host"),
                );
            } else {
                self.write_target(dest, &who, WriteKind::Plain);
            }
        } else {
            self.raise(WorkspaceMutating, format!("`{key}` changes files"));
        }
        if key == "mv" {
            // The sources disappear: moving a file away is deleting it where it was.
            let n = parsed.operands.len();
            let sources = if target_dir.is_some() {
                n
            } else {
                n.saturating_sub(1)
            };
            for s in parsed.operands.iter().take(sources) {
                // Moving the home directory or a tree that holds the workspace away (`mv ~ x`,
                // `mv .. x`) deletes it where it was, as `rm -r` would.
                let kind = if paths::whole_tree(s) {
                    WriteKind::Recursive
                } else {
                    WriteKind::Plain
                };
                self.write_target(s, "`mv` (source)", kind);
            }
        }
    }

    fn patch(&mut self, args: &[Word]) {
        let parsed = options::parse(
            args,
            OptionSyntax::gnu(&[
                "-o",
                "--output",
                "-i",
                "--input",
                "-p",
                "--strip",
                "-d",
                "--directory",
                "-r",
                "--reject-file",
                "-B",
                "--prefix",
                "-F",
                "--fuzz",
                "-z",
                "--suffix",
                "-V",
                "--version-control",
                "-D",
                "--ifdef",
            ]),
        );
        if let Some(out) = parsed
            .value_of("-o")
            .or_else(|| parsed.value_of("--output"))
        {
            self.write_target(&Word::literal(out), "`patch -o`", WriteKind::Plain);
        }
        match parsed.operands.first() {
            Some(file) => self.write_target(file, "`patch`", WriteKind::Plain),
            None => self.raise(WorkspaceMutating, "`patch` writes the files its diff names"),
        }
    }

    /// `ssh HOST CMD…` runs CMD by a shell on HOST. What it does there is classified as a script
    /// of its own; the workspace is not there, so only a DANGEROUS verdict carries over.
    fn ssh(&mut self, args: &[Word]) {
        self.raise(ShellComplex, "`ssh` runs commands on another host");
        let parsed = options::parse(args, OptionSyntax::gnu(SSH_VALUES).options_first());
        let Some((host, command)) = parsed.operands.split_first() else {
            return;
        };
        if command.is_empty() || command.iter().any(|w| w.dynamic) {
            return;
        }
        let script = command
            .iter()
            .map(|w| w.value.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let remote = super::classify::classify(self.config, &script, self.depth + 1, self.budget);
        if remote.class == Dangerous {
            self.raise(
                Dangerous,
                format!(
                    "`ssh {}` runs `{script}` there: {}",
                    host.value,
                    remote.reasons.join("; ")
                ),
            );
        }
    }

    fn netcat(&mut self, key: &str, args: &[Word]) {
        let exec = args.iter().any(|a| {
            let v = a.value.as_str();
            ["-e", "-c", "--exec", "--sh-exec", "--lua-exec"]
                .iter()
                .any(|f| v == *f || v.starts_with(&format!("{f}=")))
                || (v.starts_with('-')
                    && !v.starts_with("--")
                    && (v.contains('e') || v.contains('c'))
                    && key != "socat")
                || (key == "socat"
                    && (v.to_ascii_uppercase().starts_with("EXEC:")
                        || v.to_ascii_uppercase().starts_with("SYSTEM:")))
        });
        if exec {
            self.raise(
                Dangerous,
                format!("`{key}` hands a network connection to a program (a remote shell)"),
            );
        } else {
            self.raise(
                ShellComplex,
                format!("`{key}` opens raw network connections"),
            );
        }
    }
}

/// ssh options that take a value.
const SSH_VALUES: &[&str] = &[
    "-B", "-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o", "-p",
    "-Q", "-R", "-S", "-W", "-w",
];

/// The value-taking options a table lists for `key`.
fn values_of(table: &[(&str, &'static [&'static str])], key: &str) -> &'static [&'static str] {
    table
        .iter()
        .find(|(n, _)| *n == key)
        .map(|(_, v)| *v)
        .unwrap_or(&[])
}

/// The output files of an allow-listed reader (`sort -o F`, `tree -o F`, `git diff --output=F`,
/// `uniq IN OUT`), with the arguments that remain once they are taken out.
fn output_file(key: &str, args: &[Word]) -> Option<(Vec<Word>, Vec<Word>)> {
    let (short, long): (Option<char>, &str) = match key {
        "sort" | "tree" => (Some('o'), "--output"),
        "git" => (None, "--output"),
        "uniq" => {
            let with_value = [
                "-f",
                "--skip-fields",
                "-s",
                "--skip-chars",
                "-w",
                "--check-chars",
            ];
            let parsed = options::parse(args, OptionSyntax::gnu(&with_value));
            if parsed.operands.len() != 2 {
                return None;
            }
            let out = parsed.operands[1];
            let rest = args
                .iter()
                .filter(|a| !std::ptr::eq(*a, out))
                .cloned()
                .collect();
            return Some((vec![out.clone()], rest));
        }
        _ => return None,
    };
    let mut targets = Vec::new();
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let v = a.value.as_str();
        i += 1;
        if let Some((name, value)) = v.split_once('=').filter(|(n, _)| n.starts_with("--")) {
            if options::option_matches(name, long) {
                targets.push(Word::literal(value));
                continue;
            }
        } else if v.starts_with("--") && v.len() > 2 {
            if options::option_matches(v, long) {
                targets.extend(args.get(i).cloned());
                i += 1;
                continue;
            }
        } else if let Some(letter) = short
            && v.starts_with('-')
            && let Some(pos) = v.find(letter)
        {
            let (before, after) = (&v[..pos], &v[pos + 1..]);
            if after.is_empty() {
                targets.extend(args.get(i).cloned());
                i += 1;
            } else {
                targets.push(Word::literal(after));
            }
            if before.len() > 1 {
                rest.push(Word::literal(before));
            }
            continue;
        }
        rest.push(a.clone());
    }
    (!targets.is_empty()).then_some((targets, rest))
}

/// The subcommand of `systemctl X` or `service NAME X` that changes what runs on the host.
fn service_change<'a>(key: &str, args: &'a [Word]) -> Option<&'a str> {
    const CHANGES: &[&str] = &[
        "start",
        "stop",
        "restart",
        "reload",
        "try-restart",
        "reload-or-restart",
        "try-reload-or-restart",
        "condrestart",
        "force-reload",
        "kill",
        "enable",
        "disable",
        "reenable",
        "mask",
        "unmask",
        "isolate",
        "set-property",
        "daemon-reload",
        "daemon-reexec",
        "edit",
        "revert",
        "set-default",
        "link",
        "preset",
        "preset-all",
        "default",
        "rescue",
        "emergency",
        "exit",
        "switch-root",
    ];
    let operands = || args.iter().filter(|a| !a.value.starts_with('-'));
    let sub = match key {
        "systemctl" => operands().next(),
        "service" => operands().nth(1),
        _ => None,
    }?;
    CHANGES
        .contains(&sub.value.as_str())
        .then_some(sub.value.as_str())
}

/// Why a container started by `docker`/`podman` reaches the host: privileged, extra
/// capabilities, the host's namespaces or security profile off, the root or the daemon's socket
/// mounted.
fn container_with_host_access(key: &str, args: &[Word]) -> Option<String> {
    if !["docker", "podman", "nerdctl"].contains(&key) {
        return None;
    }
    let mut operands = args.iter().filter(|a| !a.value.starts_with('-'));
    let mut sub = operands.next()?.value.as_str();
    if sub == "container" {
        // `docker container run …` is `docker run …`.
        sub = operands.next()?.value.as_str();
    }
    if !["run", "create", "exec"].contains(&sub) {
        return None;
    }
    let host_namespace = [
        "--pid",
        "--ipc",
        "--uts",
        "--userns",
        "--net",
        "--network",
        "--cgroupns",
    ];
    for (i, a) in args.iter().enumerate() {
        let v = a.value.as_str();
        let (name, attached) = match v.split_once('=') {
            Some((n, val)) => (n, Some(val)),
            None => (v, None),
        };
        let value = || attached.or_else(|| args.get(i + 1).map(|w| w.value.as_str()));
        let why = if name == "--privileged" {
            Some("runs a privileged container".to_string())
        } else if name == "--cap-add" || name == "--device" {
            Some(format!("gives the container `{v}`"))
        } else if host_namespace.contains(&name) && value() == Some("host") {
            Some(format!("shares the host's namespace (`{name} host`)"))
        } else if name == "--security-opt" && value().is_some_and(|x| x.contains("unconfined")) {
            Some("switches the container's security profile off".to_string())
        } else if ["-v", "--volume", "--mount"].contains(&name)
            && value().is_some_and(|x| {
                let source = x
                    .split(',')
                    .find_map(|p| p.strip_prefix("source=").or_else(|| p.strip_prefix("src=")))
                    .unwrap_or_else(|| x.split(':').next().unwrap_or(x));
                source == "/" || source.ends_with("docker.sock") || source.ends_with("podman.sock")
            })
        {
            Some("mounts the host's root or its container daemon's socket".to_string())
        } else {
            None
        };
        if why.is_some() {
            return why;
        }
    }
    None
}

/// `kill -9 -1`, `kill -- -1`, `kill 1`: every process, or init.
fn kills_everything(args: &[Word]) -> bool {
    let mut seen_signal = false;
    let mut after_dashes = false;
    for a in args {
        let v = a.value.as_str();
        if v == "--" {
            after_dashes = true;
            continue;
        }
        if v == "-1" && (seen_signal || after_dashes) {
            return true;
        }
        if v == "1" {
            return true;
        }
        if v.starts_with('-') && !after_dashes {
            seen_signal = true;
            if v == "-s" || v == "-n" {
                continue;
            }
        } else {
            seen_signal = true;
        }
    }
    false
}

fn setuid_mode(mode: &str) -> bool {
    if mode.chars().all(|c| c.is_ascii_digit()) && mode.len() >= 4 {
        let special = mode
            .chars()
            .rev()
            .nth(3)
            .and_then(|c| c.to_digit(8))
            .unwrap_or(0);
        return special & 0b110 != 0;
    }
    mode.split(',').any(|clause| {
        // rsync's `--chmod=Du+s,Fg+s` names directories (D) or files (F) first.
        let perms = clause.trim_start_matches(|c| "DFugoa".contains(c));
        (perms.starts_with('+') || perms.starts_with('=')) && perms.contains('s')
    })
}

fn is_remote(v: &str) -> bool {
    if v.starts_with("rsync://") || v.contains("://") {
        return true;
    }
    match v.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/'),
        None => false,
    }
}

fn first_operand(args: &[Word]) -> Option<&str> {
    args.iter()
        .map(|a| a.value.as_str())
        .find(|v| !v.starts_with('-') || v.len() > 1 && v.starts_with("-S"))
}

/// `find`'s starting points: the words before its expression.
fn find_roots(args: &[Word]) -> Vec<&Word> {
    args.iter()
        .take_while(|a| !a.value.starts_with('-') && a.value != "(" && a.value != "!")
        .collect()
}

/// What `{}` becomes for a file `find` finds under `start`: a path that begins as the starting
/// point does (`./name` with `-execdir`), whose rest is known only at run time.
fn found_file(start: &Word, in_dir: bool) -> Word {
    let mut w = if in_dir {
        Word::literal("./")
    } else {
        start.clone()
    };
    w.raw = format!("{}{{found}}", w.raw);
    w.dynamic = true;
    w
}
