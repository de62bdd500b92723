//! The race: a second thread flips a path between a real file (or directory) and a link to
//! outside while the first writes through `Workspace` as fast as it can. Nothing may ever be
//! written outside, under either open strategy. Each race first says, and proves by what the
//! operations do, which path it exercises on this host: `openat2` or the `O_NOFOLLOW` walk.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use spear::harness::workspace::{Access, FsError, OpenPath, OpenStrategy, Workspace};

use crate::features::{host_has_openat2, record_feature};
use crate::support::Layout;

/// The path `strategy` must take on this host.
fn expected_path(strategy: OpenStrategy) -> OpenPath {
    match strategy {
        OpenStrategy::Auto if host_has_openat2() => OpenPath::Openat2,
        OpenStrategy::Auto | OpenStrategy::NoFollowWalk => OpenPath::NoFollowWalk,
    }
}

/// Which path `ws` took, told by what it does rather than by what it says: a directory swapped
/// after `resolve` for a link that stays inside the root is followed by `openat2` (a relative
/// link that stays beneath is allowed) and refused by the walk (it follows no link at all).
fn observed_path(ws: &Workspace, l: &Layout) -> OpenPath {
    let base = l.project.join("fingerprint");
    std::fs::create_dir_all(base.join("real")).unwrap();
    std::fs::create_dir_all(base.join("swapped")).unwrap();
    let p = ws.resolve("fingerprint/swapped/f", Access::Write).unwrap();
    std::fs::remove_dir(base.join("swapped")).unwrap();
    std::os::unix::fs::symlink("real", base.join("swapped")).unwrap();
    let path = match ws.write_atomic(&p, b"fingerprint") {
        Ok(_) => {
            assert_eq!(
                std::fs::read_to_string(base.join("real/f")).unwrap(),
                "fingerprint"
            );
            OpenPath::Openat2
        }
        Err(FsError::Escaped(_)) => OpenPath::NoFollowWalk,
        Err(e) => panic!("the fingerprint write failed for another reason: {e}"),
    };
    std::fs::remove_dir_all(&base).unwrap();
    path
}

fn race(strategy: OpenStrategy, flip_dir: bool) {
    let l = Layout::new();
    let victim = l.outside.join("victim.txt");
    std::fs::write(&victim, "untouched").unwrap();
    std::fs::create_dir_all(l.project.join("d")).unwrap();
    let ws = Workspace::new(&l.project)
        .unwrap()
        .with_open_strategy(strategy);
    let expected = expected_path(strategy);
    assert_eq!(ws.open_path(), expected, "{strategy:?} on this host");
    assert_eq!(
        observed_path(&ws, &l),
        expected,
        "{strategy:?}: the operations took another path than the one reported"
    );
    let what = if flip_dir { "directory" } else { "file" };
    eprintln!("{what} race, {strategy:?}: exercising {expected}");
    let key = match strategy {
        OpenStrategy::Auto => "workspace_open_default",
        OpenStrategy::NoFollowWalk => "workspace_open_forced",
    };
    record_feature(key, &expected.to_string());
    let stop = Arc::new(AtomicBool::new(false));
    let (flip_at, real_is_dir, link_to): (std::path::PathBuf, bool, std::path::PathBuf) =
        if flip_dir {
            (l.project.join("d"), true, l.outside.clone())
        } else {
            (l.project.join("d/victim.txt"), false, victim.clone())
        };
    // The other name of the pair: the link to outside. RENAME_EXCHANGE swaps the two names
    // atomically, so the path is always either the real thing or the link, never missing.
    let other = flip_at.with_extension("flip");
    std::os::unix::fs::symlink(&link_to, &other).unwrap();
    if !real_is_dir {
        std::fs::write(&flip_at, "real").unwrap();
    }
    let flipper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // A write that won the race replaced the link with a file (it never follows
                // one); put a link back, by rename so the name never goes missing.
                let links = [&flip_at, &other]
                    .iter()
                    .filter(|n| std::fs::symlink_metadata(n).is_ok_and(|m| m.is_symlink()))
                    .count();
                if links == 0 {
                    let relink = other.with_extension("relink");
                    let _ = std::fs::remove_file(&relink);
                    std::os::unix::fs::symlink(&link_to, &relink).unwrap();
                    std::fs::rename(&relink, &other).unwrap();
                }
                rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &flip_at,
                    rustix::fs::CWD,
                    &other,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                flips += 1;
            }
            flips
        })
    };
    let deadline = Instant::now() + Duration::from_millis(1500);
    let (mut written, mut refused) = (0u64, 0u64);
    while Instant::now() < deadline {
        match ws.resolve("d/victim.txt", Access::Write) {
            Ok(p) => match ws.write_atomic(&p, b"pwned") {
                Ok(_) => written += 1,
                Err(_) => refused += 1,
            },
            Err(_) => refused += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    let stray: Vec<_> = std::fs::read_dir(&l.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(stray.len(), 1, "files appeared outside: {stray:?}");
    assert!(flips > 100, "the flipper barely ran ({flips} flips)");
    // Both outcomes must happen, or the race did not really race.
    assert!(
        written > 10 && refused > 10,
        "too few of one outcome: {written} written, {refused} refused"
    );
}

#[test]
fn file_flipped_to_link_host_default() {
    race(OpenStrategy::Auto, false);
}

#[test]
fn file_flipped_to_link_nofollow_walk() {
    race(OpenStrategy::NoFollowWalk, false);
}

#[test]
fn directory_flipped_to_link_host_default() {
    race(OpenStrategy::Auto, true);
}

#[test]
fn directory_flipped_to_link_nofollow_walk() {
    race(OpenStrategy::NoFollowWalk, true);
}
