//! Issue 20: a command leaves no set-id file. Inside the sandbox every way to put S_ISUID or
//! S_ISGID on a file fails (chmod, install -m, open with a mode, a tar archive's member mode,
//! cp -p of a set-uid program), in the workspace and in the private /tmp alike, while ordinary
//! modes still work; on the host afterwards no file in the workspace carries either bit.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::features::record_feature;
use crate::seccomp_filter::require_python;
use crate::support::*;
use spear::harness::primitives::ToolStatus;

const SCRIPT: &str = r##"
set -u
for d in . /tmp; do
  touch "$d/f"
  chmod u+s "$d/f"; echo "chmod-u+s $d=$?"
  chmod g+s "$d/f"; echo "chmod-g+s $d=$?"
  chmod 4755 "$d/f"; echo "chmod-4755 $d=$?"
  chmod 755 "$d/f"; echo "chmod-755 $d=$?"
  install -m 4755 /dev/null "$d/inst" 2>/dev/null; echo "install $d=$?"
  python3 -c 'import os,sys; os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o6755)' "$d/opened" 2>/dev/null; echo "open $d=$?"
  python3 -c 'import os,sys; os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o755)' "$d/plain" 2>/dev/null; echo "open-plain $d=$?"
done
python3 - <<'PY'
import io, tarfile
with tarfile.open("a.tar", "w") as t:
    for name, mode in (("suid-member", 0o4755), ("sgid-member", 0o2755)):
        data = b"#!/bin/sh\necho hi\n"
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = mode
        t.addfile(info, io.BytesIO(data))
PY
tar xf a.tar 2>/dev/null; echo "tar=$?"
src=$(find /usr/bin /bin -maxdepth 1 -perm -4000 -type f 2>/dev/null | head -n 1)
if [ -n "$src" ]; then cp -p "$src" ./copied 2>/dev/null; echo "cp-p=$?"; else echo "cp-p=none"; fi
find . /tmp -perm /6000 -type f 2>/dev/null | sed 's/^/set-id: /'
echo end
"##;

fn set_id_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let meta = e.path().symlink_metadata().unwrap();
            if meta.is_dir() {
                stack.push(e.path());
            } else if meta.permissions().mode() & 0o6000 != 0 {
                out.push(format!(
                    "{} {:o}",
                    e.path().display(),
                    meta.permissions().mode()
                ));
            }
        }
    }
    out
}

#[tokio::test]
async fn no_command_leaves_a_set_id_file() {
    require_python();
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let res = run(&r, writable(), SCRIPT).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    let out = &res.stdout;
    assert!(out.contains("end"), "{res:?}");
    for d in [".", "/tmp"] {
        for refused in ["chmod-u+s", "chmod-g+s", "chmod-4755", "install", "open"] {
            let line = format!("{refused} {d}=");
            assert!(
                out.lines()
                    .any(|l| l.starts_with(&line) && !l.ends_with("=0")),
                "{refused} in {d} succeeded: {out}"
            );
        }
        // Ordinary modes are untouched.
        for ok in ["chmod-755", "open-plain"] {
            let line = format!("{ok} {d}=0");
            assert!(out.lines().any(|l| l == line), "{ok} in {d} failed: {out}");
        }
    }
    assert!(
        !out.contains("set-id: "),
        "a set-id file exists inside: {out}"
    );
    // The host's view, after the command.
    let left = set_id_files(&ws);
    assert!(
        left.is_empty(),
        "set-id files left in the workspace: {left:?}"
    );
    record_feature("set_id_refused", "chmod, install, open, tar, cp -p");
}

/// What the sandbox lets a command do to the directories that must stay the owner's (the
/// workspace root and `.git`): make them writable by others through the mode or an ACL. The run
/// fails naming each, and on the host afterwards each is back to the owner alone.
#[tokio::test]
async fn a_widened_root_or_git_directory_is_narrowed_again_and_named() {
    require_python();
    let (_d, ws) = workspace();
    std::fs::create_dir(ws.join(".git")).unwrap();
    std::fs::set_permissions(&ws, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(ws.join(".git"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = runner(&ws);
    // An access ACL giving a named group (the only one the sandbox maps: the person's own)
    // rwx: version 2, then (tag, perm, id) entries in tag order.
    let script = r#"
chmod 777 .git; echo "chmod-git=$?"
chmod 775 .; echo "chmod-root=$?"
python3 - <<'PY'
import os, struct
entries = [(0x01, 7, 0xFFFFFFFF), (0x04, 5, 0xFFFFFFFF), (0x08, 7, os.getgid()), (0x10, 7, 0xFFFFFFFF), (0x20, 5, 0xFFFFFFFF)]
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
try:
    os.setxattr(".", "system.posix_acl_access", acl)
    print("acl=set")
except OSError as e:
    print("acl=unsupported", e.errno)
PY
"#;
    let res = run(&r, writable(), script).await;
    eprintln!("{}", res.stdout);
    assert!(res.stdout.contains("chmod-git=0"), "{res:?}");
    assert_eq!(res.status, ToolStatus::Failed, "{res:?}");
    let reason = res.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("`.git` writable by others (777) (cleared)"),
        "{reason}"
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&ws.join(".git")), 0o755, "{reason}");
    assert_eq!(mode(&ws) & 0o022, 0, "{reason}");
    if res.stdout.contains("acl=set") {
        assert!(
            reason.contains("`.` with an ACL that lets others write (cleared)"),
            "{reason}"
        );
        let mut buf = [0u8; 256];
        assert!(
            rustix::fs::getxattr(&ws, "system.posix_acl_access", &mut buf).is_err(),
            "the ACL is still on the workspace root"
        );
    }
}
