//! The executables the classifier knows by name, grouped by what they do. Anything not here and
//! not on the read-only allow-list is unknown, and unknown is at least SHELL_COMPLEX.

/// Programs that run other programs with more privilege.
pub(crate) const PRIVILEGE: &[&str] = &[
    "sudo", "su", "doas", "pkexec", "run0", "sg", "newgrp", "chroot", "nsenter", "unshare",
    "capsh", "setpriv", "runuser",
];

/// Programs that format, partition or wipe disks.
pub(crate) const DISK: &[&str] = &[
    "fdisk",
    "sfdisk",
    "cfdisk",
    "gdisk",
    "sgdisk",
    "parted",
    "wipefs",
    "mkswap",
    "blkdiscard",
    "mke2fs",
    "mkdosfs",
    "dmsetup",
    "cryptsetup",
    "losetup",
    "hdparm",
    "badblocks",
    "debugfs",
    "tune2fs",
    "e2fsck",
    "fsck",
];

/// Programs that stop the machine.
pub(crate) const POWER: &[&str] = &["shutdown", "reboot", "halt", "poweroff", "telinit", "kexec"];

/// Programs that change system configuration outside any workspace.
pub(crate) const SYSTEM_CHANGE: &[&str] = &[
    "mount",
    "umount",
    "insmod",
    "rmmod",
    "modprobe",
    "swapon",
    "swapoff",
    "iptables",
    "ip6tables",
    "nft",
    "sysctl",
    "useradd",
    "userdel",
    "usermod",
    "groupadd",
    "groupdel",
    "passwd",
    "chpasswd",
    "visudo",
    "setcap",
    "update-grub",
    "grub-install",
    "crontab",
    "at",
    "systemd-run",
];

/// Programs that kill processes by name (reaching outside the sandbox's own).
pub(crate) const KILL_BY_NAME: &[&str] = &["killall", "pkill", "killall5", "skill", "slay"];

/// Shells: `-c STRING` runs STRING; otherwise a script file or standard input.
pub(crate) const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "rbash", "yash", "posh", "fish", "csh",
    "tcsh",
];

/// Interpreters and the flags that take inline code.
pub(crate) const INTERPRETERS: &[(&str, &[&str])] = &[
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("nodejs", &["-e", "--eval", "-p", "--print"]),
    ("bun", &["-e", "--eval", "-p", "--print"]),
    ("deno", &["eval"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
    ("luajit", &["-e"]),
    ("Rscript", &["-e"]),
    ("R", &["-e"]),
    ("julia", &["-e"]),
    ("tclsh", &[]),
    ("wish", &[]),
    ("pwsh", &["-c", "-Command", "-command"]),
    ("powershell", &["-c", "-Command", "-command"]),
    ("osascript", &["-e"]),
    ("guile", &["-c"]),
    ("racket", &["-e"]),
    ("elixir", &["-e"]),
    ("erl", &["-eval"]),
    ("groovy", &["-e"]),
    ("jshell", &[]),
    ("irb", &[]),
    ("ghci", &[]),
    ("java", &[]),
    ("gdb", &["-ex", "--eval-command"]),
    ("vim", &["-c", "--cmd"]),
    ("nvim", &["-c", "--cmd"]),
    ("emacs", &["--eval"]),
];

/// The inline-code flags of an interpreter, or None when `key` is no interpreter.
pub(crate) fn interpreter(key: &str) -> Option<&'static [&'static str]> {
    if is_python(key) {
        return Some(&["-c"]);
    }
    INTERPRETERS
        .iter()
        .find(|(n, _)| *n == key)
        .map(|(_, flags)| *flags)
}

pub(crate) fn is_python(key: &str) -> bool {
    ["python", "pypy"].iter().any(|p| {
        key.strip_prefix(p)
            .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
    })
}

/// awk implementations.
pub(crate) const AWKS: &[&str] = &["awk", "gawk", "mawk", "nawk", "busybox-awk"];

/// Wrappers: they run the command in their operands.
pub(crate) const WRAPPERS: &[&str] = &[
    "coproc",
    "env",
    "timeout",
    "nice",
    "nohup",
    "command",
    "exec",
    "xargs",
    "parallel",
    "stdbuf",
    "setsid",
    "ionice",
    "chrt",
    "taskset",
    "flock",
    "watch",
    "unbuffer",
    "strace",
    "ltrace",
    "builtin",
    "busybox",
    "time",
    "catchsegv",
    "faketime",
    "torsocks",
    "proxychains",
    "proxychains4",
    "firejail",
    "script",
];

/// Programs that fetch from the network and can hand what they fetch to another program.
pub(crate) const FETCHERS: &[&str] = &[
    "curl", "wget", "fetch", "aria2c", "http", "https", "xh", "nc", "ncat", "netcat", "socat",
    "ftp", "tftp", "lynx", "links", "w3m",
];

/// Programs whose every use needs the network.
pub(crate) const ALWAYS_NETWORK: &[&str] = &[
    "curl",
    "wget",
    "fetch",
    "aria2c",
    "http",
    "https",
    "xh",
    "nc",
    "ncat",
    "netcat",
    "telnet",
    "ssh",
    "scp",
    "sftp",
    "ftp",
    "tftp",
    "socat",
    "ping",
    "ping6",
    "dig",
    "nslookup",
    "host",
    "whois",
    "traceroute",
    "tracepath",
    "mtr",
    "npx",
    "lynx",
    "links",
    "w3m",
    "torsocks",
    "sshpass",
    "mosh",
];

/// (program, subcommands that need the network). An empty subcommand list means "install-like
/// subcommands" are listed explicitly; a program absent here needs no network by itself.
pub(crate) const NETWORK_SUBCOMMANDS: &[(&str, &[&str])] = &[
    (
        "git",
        &[
            "clone",
            "fetch",
            "pull",
            "push",
            "ls-remote",
            "submodule",
            "remote",
            "archive",
            "request-pull",
            "send-email",
        ],
    ),
    (
        "npm",
        &[
            "install", "i", "ci", "add", "update", "upgrade", "up", "publish", "exec", "create",
            "init", "audit", "outdated", "view", "info", "search", "login", "dedupe", "x",
        ],
    ),
    (
        "pnpm",
        &[
            "install", "i", "add", "update", "up", "dlx", "publish", "create", "fetch", "outdated",
            "audit",
        ],
    ),
    (
        "yarn",
        &[
            "install", "add", "upgrade", "up", "dlx", "create", "publish", "outdated", "audit",
            "info",
        ],
    ),
    ("pip", &["install", "download", "search", "index", "wheel"]),
    ("pip3", &["install", "download", "search", "index", "wheel"]),
    ("pipx", &["install", "run", "upgrade", "inject"]),
    (
        "uv",
        &[
            "pip", "add", "sync", "lock", "run", "tool", "venv", "python",
        ],
    ),
    (
        "poetry",
        &["install", "add", "update", "lock", "publish", "search"],
    ),
    (
        "cargo",
        &[
            "install",
            "fetch",
            "update",
            "add",
            "publish",
            "search",
            "login",
            "yank",
            "owner",
            "generate-lockfile",
        ],
    ),
    ("go", &["get", "install", "mod"]),
    ("gem", &["install", "update", "fetch", "push"]),
    ("bundle", &["install", "update", "add"]),
    (
        "composer",
        &["install", "require", "update", "create-project"],
    ),
    ("conda", &["install", "create", "update", "search"]),
    ("mamba", &["install", "create", "update", "search"]),
    (
        "docker",
        &["pull", "push", "login", "build", "run", "search"],
    ),
    (
        "podman",
        &["pull", "push", "login", "build", "run", "search"],
    ),
    ("rsync", &[]),
];

/// System package managers: they need the network and change the system, not the workspace.
pub(crate) const SYSTEM_PACKAGES: &[(&str, &[&str])] = &[
    (
        "apt",
        &[
            "install",
            "update",
            "upgrade",
            "full-upgrade",
            "dist-upgrade",
            "remove",
            "purge",
            "autoremove",
        ],
    ),
    (
        "apt-get",
        &[
            "install",
            "update",
            "upgrade",
            "dist-upgrade",
            "remove",
            "purge",
            "autoremove",
            "source",
            "download",
        ],
    ),
    (
        "aptitude",
        &["install", "update", "upgrade", "remove", "purge"],
    ),
    ("dnf", &["install", "update", "upgrade", "remove"]),
    ("yum", &["install", "update", "upgrade", "remove"]),
    ("apk", &["add", "update", "upgrade", "del"]),
    ("pacman", &["-S", "-Sy", "-Syu", "-Syyu", "-R", "-U"]),
    ("zypper", &["install", "in", "update", "up", "remove"]),
    (
        "brew",
        &["install", "update", "upgrade", "uninstall", "tap"],
    ),
    ("snap", &["install", "refresh", "remove"]),
    ("flatpak", &["install", "update", "uninstall"]),
    (
        "dpkg",
        &["-i", "--install", "-r", "--remove", "-P", "--purge"],
    ),
    (
        "rpm",
        &["-i", "-U", "-e", "--install", "--upgrade", "--erase"],
    ),
];

/// Build and test runners: they run the project's code and can change the workspace.
pub(crate) const BUILDS: &[&str] = &[
    "make",
    "gmake",
    "cmake",
    "ninja",
    "meson",
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "go",
    "mvn",
    "gradle",
    "pytest",
    "tox",
    "nox",
    "tsc",
    "rustc",
    "gcc",
    "g++",
    "cc",
    "c++",
    "clang",
    "clang++",
    "javac",
    "dotnet",
    "bundle",
    "rake",
    "composer",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "jest",
    "vitest",
    "mocha",
    "rustfmt",
    "gofmt",
    "prettier",
    "eslint",
    "black",
    "ruff",
    "mypy",
    "bazel",
    "buck",
    "scons",
    "ant",
    "sbt",
    "lein",
    "mix",
    "stack",
    "cabal",
    "zig",
    "swift",
    "swiftc",
    "deno",
    "bun",
    "pipx",
    "gem",
    "conda",
    "mamba",
    "ctest",
    "cpack",
    "autoreconf",
    "configure",
    "protoc",
];

/// Writers whose targets are their operands.
pub(crate) const OPERAND_WRITERS: &[(&str, &[&str])] = &[
    ("touch", &["-d", "-t", "-r", "--date", "--reference"]),
    ("mkdir", &["-m", "--mode", "--context"]),
    ("rm", &[]),
    ("rmdir", &[]),
    ("unlink", &[]),
    (
        "shred",
        &["-n", "-s", "--iterations", "--size", "--random-source"],
    ),
    ("truncate", &["-s", "-r", "--size", "--reference"]),
    // `--output-error[=MODE]`: the value is only ever attached, so the next word is a file.
    ("tee", &[]),
    ("mkfifo", &["-m", "--mode", "--context"]),
    ("mknod", &["-m", "--mode", "--context"]),
    ("chmod", &["--reference"]),
    ("chown", &["--reference", "--from"]),
    ("chgrp", &["--reference"]),
    ("chattr", &["-v", "-p"]),
    (
        "setfacl",
        &[
            "-m",
            "-x",
            "-M",
            "-X",
            "--modify",
            "--remove",
            "--set",
            "--set-file",
        ],
    ),
];

/// Writers whose target is the last operand or `-t DIR`.
pub(crate) const DESTINATION_WRITERS: &[(&str, &[&str])] = &[
    (
        "cp",
        &[
            "-t",
            "--target-directory",
            "-S",
            "--suffix",
            "--backup",
            "--sparse",
            "--reflink",
            "--preserve",
            "--no-preserve",
        ],
    ),
    ("mv", &["-t", "--target-directory", "-S", "--suffix"]),
    (
        "install",
        &[
            "-t",
            "--target-directory",
            "-m",
            "--mode",
            "-o",
            "--owner",
            "-g",
            "--group",
            "-S",
            "--suffix",
        ],
    ),
    ("ln", &["-t", "--target-directory", "-S", "--suffix"]),
    (
        "rsync",
        &[
            "-e",
            "--rsh",
            "--exclude",
            "--include",
            "--filter",
            "-f",
            "--exclude-from",
            "--include-from",
            "--files-from",
            "--chmod",
            "--backup-dir",
            "--temp-dir",
            "--log-file",
            "--partial-dir",
        ],
    ),
    ("scp", &["-P", "-i", "-o", "-F", "-c", "-l", "-J", "-S"]),
];

/// Archivers and compressors: they write files beside or inside their operands.
pub(crate) const ARCHIVERS: &[&str] = &[
    "tar",
    "zip",
    "unzip",
    "gzip",
    "gunzip",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "zstd",
    "unzstd",
    "7z",
    "7za",
    "lz4",
    "compress",
    "uncompress",
    "ar",
    "cpio",
    "split",
    "csplit",
    "zcat",
];

/// Directories whose programs are known by their base name (`/usr/bin/ls` is `ls`).
pub(crate) const SYSTEM_BIN_DIRS: &[&str] = &[
    "/bin",
    "/usr/bin",
    "/usr/local/bin",
    "/sbin",
    "/usr/sbin",
    "/usr/local/sbin",
];

/// curl options whose value is a file curl writes.
pub(crate) const CURL_OUTPUT_FILES: &[&str] = &[
    "-o",
    "--output",
    "-D",
    "--dump-header",
    "-c",
    "--cookie-jar",
    "--trace",
    "--trace-ascii",
    "--libcurl",
    "--stderr",
    "--etag-save",
    "--hsts",
    "--alt-svc",
];
/// Other curl options that take a value.
pub(crate) const CURL_VALUES: &[&str] = &[
    "--output-dir",
    "-K",
    "--config",
    "-d",
    "--data",
    "-H",
    "--header",
    "-X",
    "--request",
    "-u",
    "--user",
    "-A",
    "--user-agent",
    "-e",
    "--referer",
    "-F",
    "--form",
    "-T",
    "--upload-file",
    "-w",
    "--write-out",
    "-x",
    "--proxy",
    "-m",
    "--max-time",
    "-b",
    "--cookie",
    "-r",
    "--range",
    "--url",
];
/// wget options whose value is a file wget writes.
pub(crate) const WGET_OUTPUT_FILES: &[&str] = &[
    "-O",
    "--output-document",
    "-o",
    "--output-file",
    "-a",
    "--append-output",
];
/// Other wget options that take a value.
pub(crate) const WGET_VALUES: &[&str] = &[
    "-P",
    "--directory-prefix",
    "-i",
    "--input-file",
    "-e",
    "--execute",
    "-U",
    "--user-agent",
    "--header",
    "-T",
    "--timeout",
    "-t",
    "--tries",
];

/// The rule key of a command name: `/usr/bin/rm` is `rm`; a program elsewhere keeps its path.
pub(crate) fn base_name(v: &str) -> &str {
    match v.rsplit_once('/') {
        Some((dir, base)) if SYSTEM_BIN_DIRS.contains(&if dir.is_empty() { "/" } else { dir }) => {
            base
        }
        _ => v,
    }
}
