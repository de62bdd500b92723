//! The race: a second thread flips a path between a real file (or directory) and a link to
//! outside while the first writes through `Workspace` as fast as it can. Nothing may ever be
//! written outside, under either open strategy.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use spear::harness::workspace::{Access, OpenStrategy, Workspace};

use crate::support::Layout;

fn race(strategy: OpenStrategy, flip_dir: bool) {
    let l = Layout::new();
    let victim = l.outside.join("victim.txt");
    std::fs::write(&victim, "untouched").unwrap();
    std::fs::create_dir_all(l.project.join("d")).unwrap();
    let ws = Workspace::new(&l.project)
        .unwrap()
        .with_open_strategy(strategy);
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
fn file_flipped_to_link_openat2() {
    race(OpenStrategy::Auto, false);
}

#[test]
fn file_flipped_to_link_nofollow_walk() {
    race(OpenStrategy::NoFollowWalk, false);
}

#[test]
fn directory_flipped_to_link_openat2() {
    race(OpenStrategy::Auto, true);
}

#[test]
fn directory_flipped_to_link_nofollow_walk() {
    race(OpenStrategy::NoFollowWalk, true);
}
