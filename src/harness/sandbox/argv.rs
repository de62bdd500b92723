//! `build_argv`: the bubblewrap argument vector for a `SandboxSpec`, as a pure function. Mount
//! order is a security property (a later mount covers an earlier one), so tests compare the
//! whole vector. Invariant: nothing here reads the filesystem or the environment.

use std::ffi::OsString;
use std::path::Path;

#[cfg(test)]
use super::spec::BindSources;
use super::spec::{Masked, Protection, SandboxNetwork, SandboxSpec, SystemEntry};
use super::tmpfs::MASK_TMPFS_BYTES;

struct Argv(Vec<OsString>);

impl Argv {
    fn flag(&mut self, f: &str) {
        self.0.push(f.into());
    }
    fn one(&mut self, f: &str, a: impl Into<OsString>) {
        self.0.push(f.into());
        self.0.push(a.into());
    }
    fn two(&mut self, f: &str, a: impl Into<OsString>, b: impl Into<OsString>) {
        self.0.push(f.into());
        self.0.push(a.into());
        self.0.push(b.into());
    }
    fn same(&mut self, f: &str, p: &Path) {
        self.two(f, p, p);
    }
    /// A tmpfs of `bytes` at `p` (bwrap's `--size` applies to the next `--tmpfs`).
    fn tmpfs(&mut self, bytes: u64, p: &Path) {
        self.one("--size", bytes.to_string());
        self.one("--tmpfs", p);
    }
    /// Hide `m`: a file behind a read-only `/dev/null`, a directory behind an empty read-only
    /// tmpfs.
    fn mask(&mut self, m: &Masked) {
        match m {
            Masked::File(p) => self.two("--ro-bind", "/dev/null", p),
            Masked::Dir(p) => {
                self.tmpfs(MASK_TMPFS_BYTES, p);
                self.one("--remount-ro", p);
            }
        }
    }
}

/// The bwrap arguments (without the program name) for `spec`.
pub fn build_argv(spec: &SandboxSpec) -> Vec<OsString> {
    let mut a = Argv(Vec::with_capacity(96));
    // Every namespace, explicitly: `--unshare-all` leaves the user namespace out for root, and
    // a user namespace is what makes the dropped capabilities mean nothing on the host.
    for ns in ["user", "ipc", "pid", "net", "uts", "cgroup"] {
        a.flag(&format!("--unshare-{ns}"));
    }
    a.flag("--die-with-parent");
    a.flag("--new-session");
    a.one("--cap-drop", "ALL");
    a.one("--hostname", "spear-sandbox");

    // The system, read-only.
    for entry in &spec.system {
        match entry {
            SystemEntry::Dir(p) => a.same("--ro-bind", p),
            SystemEntry::Symlink { path, target } => a.two("--symlink", target, path),
        }
    }
    for m in &spec.masked {
        a.mask(m);
    }

    // The kernel's view: what changes the host read-only, what reveals it hidden. The binds'
    // sources are the host's /proc; see `procfs` for why that is the same view.
    a.one("--proc", "/proc");
    for p in &spec.proc_read_only {
        a.same("--ro-bind", p);
    }
    for m in &spec.proc_masked {
        a.mask(m);
    }
    // bwrap cannot size the tmpfs under /dev, so it is made read-only once its device nodes
    // are in place; the one writable place under it, /dev/shm, is a sized tmpfs of its own.
    a.one("--dev", "/dev");
    a.tmpfs(spec.tmpfs.dev_shm, Path::new("/dev/shm"));
    a.one("--remount-ro", "/dev");

    // Private, bounded scratch space; $HOME last, so a home under /run is not covered.
    a.tmpfs(spec.tmpfs.tmp, Path::new("/tmp"));
    a.tmpfs(spec.tmpfs.run, Path::new("/run"));
    a.tmpfs(spec.tmpfs.home, &spec.home);
    if let SandboxNetwork::Slirp {
        resolv_conf_fd,
        resolv_conf_dest,
        ..
    } = &spec.network
    {
        a.two(
            "--ro-bind-data",
            resolv_conf_fd.to_string(),
            resolv_conf_dest,
        );
    }

    // The workspace, then what stays read-only inside it.
    let from = |p: &Path| spec.workspace_source(p);
    if spec.workspace_hidden {
        // Nothing of it: no bind, and the sockets in it need no cover.
    } else if spec.workspace_write {
        a.two("--bind", from(&spec.workspace), &spec.workspace);
        for p in &spec.protections {
            match p {
                Protection::Pin(d) => a.two("--bind", from(d), d),
                Protection::ReadOnly(d) => a.two("--ro-bind", from(d), d),
                Protection::Placeholder(d) => a.two("--ro-bind", "/dev/null", d),
            }
        }
    } else {
        a.two("--ro-bind", from(&spec.workspace), &spec.workspace);
    }
    if !spec.workspace_hidden {
        for s in &spec.covered_sockets {
            a.two("--ro-bind", "/dev/null", s);
        }
    }
    for (i, p) in spec.host_read_paths.iter().enumerate() {
        a.two("--ro-bind", spec.host_read_source(i), p);
    }
    a.one(
        "--chdir",
        if spec.workspace_hidden {
            &spec.home
        } else {
            &spec.workspace
        },
    );

    a.one("--info-fd", spec.info_fd.to_string());
    a.one("--userns-block-fd", spec.gate_fd.to_string());
    a.one("--block-fd", spec.gate_fd.to_string());
    a.one("--seccomp", spec.seccomp_fd.to_string());
    // bwrap is spawned with an empty environment but for `secret_env`, which reaches the
    // command only if bwrap's own environment is kept: then there is nothing else to clear.
    if !spec.secret_env.enabled() {
        a.flag("--clearenv");
    }
    for (k, v) in &spec.env {
        a.two("--setenv", k, v);
    }
    a.flag("--");
    a.0.extend(spec.command.iter().cloned());
    a.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::sandbox::tmpfs::TmpfsSizes;
    use std::path::PathBuf;

    fn spec() -> SandboxSpec {
        SandboxSpec {
            workspace: "/w".into(),
            workspace_write: false,
            workspace_hidden: false,
            system: vec![
                SystemEntry::Dir("/usr".into()),
                SystemEntry::Symlink {
                    path: "/bin".into(),
                    target: "usr/bin".into(),
                },
                SystemEntry::Dir("/etc".into()),
            ],
            masked: vec![
                Masked::File("/etc/shadow".into()),
                Masked::Dir("/etc/ssh".into()),
            ],
            home: "/home/u".into(),
            tmpdir: "/tmp".into(),
            tmpfs: TmpfsSizes {
                tmp: 1024,
                home: 2048,
                run: 512,
                dev_shm: 256,
            },
            proc_read_only: vec!["/proc/sys".into(), "/proc/irq".into()],
            proc_masked: vec![
                Masked::File("/proc/keys".into()),
                Masked::Dir("/proc/acpi".into()),
            ],
            protections: vec![],
            covered_sockets: vec![],
            host_read_paths: vec![],
            env: vec![("HOME".into(), "/home/u".into())],
            secret_env: Default::default(),
            network: SandboxNetwork::Closed,
            info_fd: 3,
            gate_fd: 4,
            seccomp_fd: 7,
            sources: BindSources::InPlace,
            command: vec!["/bin/bash".into(), "-c".into(), "true".into()],
        }
    }

    fn words(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    const HEAD: &str = "--unshare-user --unshare-ipc --unshare-pid --unshare-net --unshare-uts \
        --unshare-cgroup --die-with-parent --new-session --cap-drop ALL \
        --hostname spear-sandbox \
        --ro-bind /usr /usr --symlink usr/bin /bin --ro-bind /etc /etc \
        --ro-bind /dev/null /etc/shadow --size 4096 --tmpfs /etc/ssh --remount-ro /etc/ssh \
        --proc /proc --ro-bind /proc/sys /proc/sys --ro-bind /proc/irq /proc/irq \
        --ro-bind /dev/null /proc/keys --size 4096 --tmpfs /proc/acpi --remount-ro /proc/acpi \
        --dev /dev --size 256 --tmpfs /dev/shm --remount-ro /dev \
        --size 1024 --tmpfs /tmp --size 512 --tmpfs /run --size 2048 --tmpfs /home/u";
    const TAIL: &str = "--seccomp 7 --clearenv --setenv HOME /home/u -- /bin/bash -c true";

    #[test]
    fn read_only_workspace() {
        let got = build_argv(&spec());
        let want = words(&format!(
            "{HEAD} --ro-bind /w /w --chdir /w --info-fd 3 --userns-block-fd 4 --block-fd 4 {TAIL}"
        ));
        assert_eq!(got, want);
    }

    #[test]
    fn workspace_sockets_are_covered_after_every_other_workspace_bind() {
        for write in [false, true] {
            let mut s = spec();
            s.workspace_write = write;
            s.protections = vec![Protection::ReadOnly("/w/.git/config".into())];
            s.covered_sockets = vec!["/w/run/ctl.sock".into()];
            let got = build_argv(&s);
            let cover = got
                .windows(3)
                .position(|w| w == ["--ro-bind", "/dev/null", "/w/run/ctl.sock"])
                .expect("the socket is covered");
            let workspace = got.iter().position(|a| a == "/w").expect("workspace bound");
            assert!(cover > workspace, "{got:?}");
            if write {
                let protection = got
                    .iter()
                    .position(|a| a == "/w/.git/config")
                    .expect("protection bound");
                assert!(cover > protection, "{got:?}");
            }
        }
    }

    #[test]
    fn writable_workspace_with_protections_and_host_paths() {
        let mut s = spec();
        s.workspace_write = true;
        s.protections = vec![
            Protection::Pin("/w/.git".into()),
            Protection::ReadOnly("/w/.git/config".into()),
            Protection::Placeholder("/w/.git/hooks".into()),
        ];
        s.host_read_paths = vec![PathBuf::from("/opt/tool")];
        let got = build_argv(&s);
        let want = words(&format!(
            "{HEAD} --bind /w /w --bind /w/.git /w/.git \
             --ro-bind /w/.git/config /w/.git/config --ro-bind /dev/null /w/.git/hooks \
             --ro-bind /opt/tool /opt/tool --chdir /w --info-fd 3 --userns-block-fd 4 --block-fd 4 {TAIL}"
        ));
        assert_eq!(got, want);
    }

    #[test]
    fn network_path_adds_dns_and_waits_for_the_helper() {
        let mut s = spec();
        s.network = SandboxNetwork::Slirp {
            resolv_conf_fd: 5,
            resolv_conf_dest: "/etc/resolv.conf".into(),
        };

        let got = build_argv(&s);
        let want = words(&format!(
            "{HEAD} --ro-bind-data 5 /etc/resolv.conf --ro-bind /w /w --chdir /w \
             --info-fd 3 --userns-block-fd 4 --block-fd 4 {TAIL}"
        ));
        assert_eq!(got, want);
    }

    #[test]
    fn every_tmpfs_is_sized_and_dev_is_read_only() {
        let mut s = spec();
        s.workspace_write = true;
        s.masked.push(Masked::Dir("/etc/credstore".into()));
        let got = build_argv(&s);
        for (i, arg) in got.iter().enumerate() {
            if arg == "--tmpfs" {
                assert_eq!(got[i - 2], "--size", "unsized tmpfs at {:?}", got[i + 1]);
                assert_ne!(got[i - 1], "0", "a size of 0 is unlimited");
            }
        }
        let at = |w: &[&str]| got.windows(w.len()).position(|x| x == w).unwrap();
        assert!(at(&["--dev", "/dev"]) < at(&["--tmpfs", "/dev/shm"]));
        assert!(at(&["--tmpfs", "/dev/shm"]) < at(&["--remount-ro", "/dev"]));
        assert!(at(&["--proc", "/proc"]) < at(&["--ro-bind", "/proc/sys", "/proc/sys"]));
    }

    #[test]
    fn staged_sources_come_from_the_stage_and_land_at_their_own_paths() {
        let mut s = spec();
        s.workspace_write = true;
        s.sources = BindSources::Staged("/run/spear-stage".into());
        s.protections = vec![
            Protection::Pin("/w/.git".into()),
            Protection::ReadOnly("/w/.git/config".into()),
            Protection::Placeholder("/w/.git/hooks".into()),
        ];
        s.host_read_paths = vec![PathBuf::from("/root/.cargo"), PathBuf::from("/opt/t")];
        let got = build_argv(&s);
        let want = words(&format!(
            "{HEAD} --bind /run/spear-stage/workspace /w \
             --bind /run/spear-stage/workspace/.git /w/.git \
             --ro-bind /run/spear-stage/workspace/.git/config /w/.git/config \
             --ro-bind /dev/null /w/.git/hooks \
             --ro-bind /run/spear-stage/read-0 /root/.cargo \
             --ro-bind /run/spear-stage/read-1 /opt/t \
             --chdir /w --info-fd 3 --userns-block-fd 4 --block-fd 4 {TAIL}"
        ));
        assert_eq!(got, want);
        s.workspace_write = false;
        let got = build_argv(&s);
        assert!(
            got.windows(3)
                .any(|w| w == ["--ro-bind", "/run/spear-stage/workspace", "/w"]),
            "{got:?}"
        );
    }

    #[test]
    fn a_hidden_workspace_is_not_bound_and_not_the_working_directory() {
        let mut s = spec();
        s.workspace_hidden = true;
        s.covered_sockets = vec!["/w/sock".into()];
        let got = build_argv(&s);
        assert!(!got.iter().any(|a| a == "/w" || a == "/w/sock"), "{got:?}");
        let chdir = got
            .iter()
            .position(|a| a == "--chdir")
            .expect("a working directory");
        assert_eq!(got[chdir + 1], *s.home.as_os_str());
    }

    #[test]
    fn read_only_workspace_ignores_protections() {
        let mut s = spec();
        s.protections = vec![Protection::Placeholder("/w/.git".into())];
        assert!(!build_argv(&s).iter().any(|a| a == "/w/.git"));
    }
}
