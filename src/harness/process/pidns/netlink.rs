//! The namespace writer's netlink exchange: send prepared requests one at a time to the kernel
//! of the namespace it has joined and read each acknowledgement. It runs in a child sharing
//! Spear's memory, so it is made of system calls and checked slice reads only. Invariant: it
//! never allocates, never panics, and succeeds only when every request was acknowledged with
//! error 0.

use std::os::raw::c_int;

/// `NLMSG_ERROR`: an acknowledgement (error 0) or a refusal.
const NLMSG_ERROR: u16 = 2;
/// How long one acknowledgement may take before the exchange is declared failed.
const ACK_TIMEOUT_SECS: libc::time_t = 5;

/// What the exchange needs, and where it leaves a refusal.
pub(super) struct Exchange {
    /// Requests back to back, each a whole netlink message with its own sequence number.
    pub requests: Vec<u8>,
    /// Receive buffer, allocated before the writer starts.
    pub buffer: Vec<u8>,
    /// The sequence number and errno of a refused request.
    pub refused: (u32, i32),
}

/// Why the exchange failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    Socket,
    Send,
    Receive,
    Refused,
}

/// Send every request and check its acknowledgement.
///
/// # Safety
/// Async-signal-safe: socket calls on buffers owned by `ex`, which nothing else touches while
/// this runs.
pub(super) unsafe fn run(ex: &mut Exchange) -> Result<(), Failure> {
    if ex.requests.is_empty() {
        return Ok(());
    }
    // SAFETY: plain system calls; the fd is closed on every path.
    unsafe {
        let fd = libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        );
        if fd < 0 {
            return Err(Failure::Socket);
        }
        let limit = libc::timeval {
            tv_sec: ACK_TIMEOUT_SECS,
            tv_usec: 0,
        };
        let timed = libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&raw const limit).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
        let result = if timed == 0 {
            exchange(fd, ex)
        } else {
            Err(Failure::Socket)
        };
        libc::close(fd);
        result
    }
}

/// # Safety
/// `fd` is an open netlink socket.
unsafe fn exchange(fd: c_int, ex: &mut Exchange) -> Result<(), Failure> {
    let mut off = 0usize;
    while off < ex.requests.len() {
        let len = read_u32(&ex.requests, off).ok_or(Failure::Send)? as usize;
        let seq = read_u32(&ex.requests, off.saturating_add(8)).ok_or(Failure::Send)?;
        let msg = ex
            .requests
            .get(off..off.saturating_add(len))
            .filter(|m| m.len() >= 16)
            .ok_or(Failure::Send)?;
        // SAFETY: `msg` is a live slice of `ex.requests`.
        let sent = unsafe { libc::send(fd, msg.as_ptr().cast(), msg.len(), 0) };
        if sent != msg.len() as isize {
            return Err(Failure::Send);
        }
        loop {
            // SAFETY: `ex.buffer` is ours and at least as long as the length passed.
            let n = unsafe { libc::recv(fd, ex.buffer.as_mut_ptr().cast(), ex.buffer.len(), 0) };
            let got = usize::try_from(n)
                .ok()
                .filter(|n| *n > 0)
                .and_then(|n| ex.buffer.get(..n))
                .ok_or(Failure::Receive)?;
            match ack_for(got, seq) {
                Some(0) => break,
                Some(error) => {
                    ex.refused = (seq, error.saturating_neg());
                    return Err(Failure::Refused);
                }
                None => {} // not this request's answer: read on
            }
        }
        off = off.saturating_add(len.saturating_add(3) & !3);
    }
    Ok(())
}

/// The error of the acknowledgement for `seq` among the messages in `data`, if there is one.
pub(super) fn ack_for(data: &[u8], seq: u32) -> Option<i32> {
    let mut off = 0usize;
    while let Some(len) = read_u32(data, off) {
        let len = len as usize;
        if len < 16 {
            return None;
        }
        let kind = data
            .get(off.saturating_add(4)..off.saturating_add(6))
            .and_then(|b| <[u8; 2]>::try_from(b).ok())
            .map(u16::from_ne_bytes);
        if kind == Some(NLMSG_ERROR) && read_u32(data, off.saturating_add(8)) == Some(seq) {
            return read_u32(data, off.saturating_add(16)).map(|e| e as i32);
        }
        off = off.saturating_add(len.saturating_add(3) & !3);
    }
    None
}

fn read_u32(data: &[u8], off: usize) -> Option<u32> {
    data.get(off..off.checked_add(4)?)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(u32::from_ne_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u16, seq: u32, error: i32) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend(36u32.to_ne_bytes());
        m.extend(kind.to_ne_bytes());
        m.extend(0u16.to_ne_bytes());
        m.extend(seq.to_ne_bytes());
        m.extend(0u32.to_ne_bytes());
        m.extend(error.to_ne_bytes());
        m.extend([0u8; 16]); // the request's header, echoed
        m
    }

    #[test]
    fn acknowledgements_are_matched_by_sequence_number() {
        let ok = message(NLMSG_ERROR, 3, 0);
        assert_eq!(ack_for(&ok, 3), Some(0));
        assert_eq!(ack_for(&ok, 4), None);
        let mut two = message(NLMSG_ERROR, 1, 0);
        two.extend(message(NLMSG_ERROR, 2, -17));
        assert_eq!(ack_for(&two, 2), Some(-17));
        assert_eq!(ack_for(&message(3, 2, 0), 2), None, "NLMSG_DONE is no ack");
    }

    #[test]
    fn malformed_answers_are_no_acknowledgement() {
        assert_eq!(ack_for(&[], 1), None);
        assert_eq!(ack_for(&[1, 2, 3], 1), None);
        let mut short = message(NLMSG_ERROR, 1, 0);
        short[0..4].copy_from_slice(&8u32.to_ne_bytes());
        assert_eq!(ack_for(&short, 1), None);
        let cut = message(NLMSG_ERROR, 1, 0);
        assert_eq!(ack_for(&cut[..18], 1), None);
        let mut huge = message(NLMSG_ERROR, 9, 0);
        huge[0..4].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert_eq!(ack_for(&huge, 1), None);
    }
}
