//! The host's kernel keyring from inside the sandbox (issue 8, item 2): keyrings are not
//! namespaced, so without the filter a command could link the host user's keyring into its
//! session and read, change or add keys. The test process plants a key of its own; the
//! sandbox may neither read it, find it, list it, change it nor add one beside it.

use std::ffi::CString;

use crate::features::record_feature;
use crate::seccomp_filter::{PYTHON, require_python};
use crate::support::*;
use spear::harness::primitives::ToolStatus;

const KEY_SPEC_USER_KEYRING: libc::c_long = -4;
const KEYCTL_GET_KEYRING_ID: libc::c_long = 0;
const KEYCTL_SEARCH: libc::c_long = 10;
const KEYCTL_READ: libc::c_long = 11;
const KEYCTL_INVALIDATE: libc::c_long = 21;

/// A key planted in this test process's user keyring, invalidated when dropped.
struct PlantedKey(libc::c_long);

impl PlantedKey {
    fn plant(desc: &str, payload: &[u8]) -> PlantedKey {
        let ty = CString::new("user").unwrap();
        let d = CString::new(desc).unwrap();
        // SAFETY: add_key reads two NUL-terminated strings and `payload.len()` bytes, all alive
        // for the duration of the call.
        let id = unsafe {
            libc::syscall(
                libc::SYS_add_key,
                ty.as_ptr(),
                d.as_ptr(),
                payload.as_ptr(),
                payload.len(),
                KEY_SPEC_USER_KEYRING,
            )
        };
        assert!(
            id > 0,
            "add_key failed on the host ({}); the keyring test needs a kernel with keys",
            std::io::Error::last_os_error()
        );
        PlantedKey(id)
    }
}

impl Drop for PlantedKey {
    fn drop(&mut self) {
        // SAFETY: keyctl with integer arguments only.
        unsafe { libc::syscall(libc::SYS_keyctl, KEYCTL_INVALIDATE, self.0) };
    }
}

fn keyctl3(op: libc::c_long, a: libc::c_long, b: libc::c_long) -> libc::c_long {
    // SAFETY: keyctl with integer arguments only.
    unsafe { libc::syscall(libc::SYS_keyctl, op, a, b, 0 as libc::c_long) }
}

fn read_key(id: libc::c_long) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 256];
    // SAFETY: KEYCTL_READ writes at most `buf.len()` bytes into `buf`, which outlives the call.
    let n = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_READ,
            id,
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    (n >= 0).then(|| {
        buf.truncate(n as usize);
        buf
    })
}

fn search_keyring(ring: libc::c_long, desc: &str) -> libc::c_long {
    let ty = CString::new("user").unwrap();
    let d = CString::new(desc).unwrap();
    // SAFETY: KEYCTL_SEARCH reads two NUL-terminated strings alive for the call.
    unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_SEARCH,
            ring,
            ty.as_ptr(),
            d.as_ptr(),
            0 as libc::c_long,
        )
    }
}

/// argv: SYS_add_key SYS_keyctl key ring description. Tries what an attacker would, prints
/// `step result errno` and whatever bytes it got.
const KEYRING_PY: &str = r#"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
add_key, keyctl = int(sys.argv[1]), int(sys.argv[2])
key, ring, desc = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].encode()
buf = ctypes.create_string_buffer(256)
def kc(step, *a):
    ctypes.set_errno(0)
    args = [ctypes.c_long(x) if isinstance(x, int) else x for x in a]
    r = libc.syscall(ctypes.c_long(keyctl), *args)
    print(step, r, ctypes.get_errno(), buf.value)
kc("read", 11, key, buf, 256)
kc("describe", 6, key, buf, 256)
kc("link", 8, ring, -3)
kc("read_after_link", 11, key, buf, 256)
kc("search", 10, ring, b"user", desc, 0)
kc("update", 2, key, b"CHANGED", 7)
ctypes.set_errno(0)
r = libc.syscall(ctypes.c_long(add_key), b"user", desc + b"-new", b"NEW", ctypes.c_long(3), ctypes.c_long(ring))
print("add", r, ctypes.get_errno(), b"")
"#;

#[tokio::test]
async fn the_host_keyring_is_out_of_reach() {
    require_python();
    let desc = format!("spear-walls-{}", std::process::id());
    let payload = format!("SPEAR-KEY-PAYLOAD-{}", std::process::id());
    let key = PlantedKey::plant(&desc, payload.as_bytes());
    let ring = keyctl3(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0);
    // Positive control: the key is there and readable from the test process itself.
    assert!(ring > 0);
    assert_eq!(read_key(key.0).as_deref(), Some(payload.as_bytes()));
    assert_eq!(
        search_keyring(ring, &desc),
        key.0,
        "the search below can find a key"
    );

    let (_d, ws) = workspace();
    let r = runner(&ws);
    let cmd = format!(
        "echo \"listed=$(grep -c {desc} /proc/keys 2>/dev/null)\"; \
         {PYTHON} -c '{KEYRING_PY}' {} {} {} {ring} {desc}",
        libc::SYS_add_key,
        libc::SYS_keyctl,
        key.0
    );
    let res = run(&r, writable(), &cmd).await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert!(
        !res.stdout.contains(&payload),
        "the payload leaked: {res:?}"
    );
    assert!(
        res.stdout.contains("listed=0") || res.stdout.contains("listed=\n"),
        "{res:?}"
    );
    for step in [
        "read",
        "describe",
        "link",
        "read_after_link",
        "search",
        "update",
        "add",
    ] {
        let want = format!("{step} -1 {} ", libc::EPERM);
        assert!(
            res.stdout.lines().any(|l| l.starts_with(&want)),
            "{step} was not refused with EPERM: {res:?}"
        );
    }
    // Nothing changed on the host: the key still holds its payload, and no key was added.
    assert_eq!(read_key(key.0).as_deref(), Some(payload.as_bytes()));
    assert!(search_keyring(ring, &format!("{desc}-new")) < 0);
    record_feature(
        "keyring",
        "a key planted on the host was out of reach (EPERM)",
    );
}
