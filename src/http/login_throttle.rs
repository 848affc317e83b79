//! Token guesses per client (console logins and API bearer tokens): after
//! [`MAX_FAILURES`] wrong tokens within [`WINDOW`], every attempt of that client (the right
//! token included, or guessing would go on) is answered 429 until the window ends. A right
//! token does not reset the count: clients behind one address (a proxy) would otherwise
//! reset each other's. A client is its IP address, an IPv6 one its
//! /64 (what one host usually holds whole). At most [`MAX_CLIENTS`] clients are tracked:
//! windows that ended are dropped first, then the oldest, so memory does not grow with the
//! number of clients.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong tokens a client may send within one [`WINDOW`].
pub const MAX_FAILURES: u32 = 5;
/// The window failures are counted in, from the first one.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Clients tracked at most.
const MAX_CLIENTS: usize = 4096;

/// Failures of one client in its current window.
#[derive(Clone, Copy, Debug)]
struct Failures {
    since: Instant,
    count: u32,
}

/// The login attempts of each client.
#[derive(Debug, Default)]
pub struct LoginThrottle {
    clients: Mutex<HashMap<IpAddr, Failures>>,
}

impl LoginThrottle {
    /// Whether `client` may try to log in at `now`; else how long until it may.
    pub fn check(&self, client: IpAddr, now: Instant) -> Result<(), Duration> {
        let clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        match clients.get(&key(client)) {
            Some(f) if f.count >= MAX_FAILURES => {
                let ends = f.since.checked_add(WINDOW).unwrap_or(now);
                match ends.checked_duration_since(now) {
                    Some(wait) if !wait.is_zero() => Err(wait),
                    _ => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// `client` sent a wrong token at `now`.
    pub fn failed(&self, client: IpAddr, now: Instant) {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        let key = key(client);
        if !clients.contains_key(&key) && clients.len() >= MAX_CLIENTS {
            make_room(&mut clients, now);
        }
        let f = clients.entry(key).or_insert(Failures {
            since: now,
            count: 0,
        });
        if ended(f, now) {
            *f = Failures {
                since: now,
                count: 0,
            };
        }
        f.count = f.count.saturating_add(1);
    }

    /// Clients tracked now.
    #[cfg(test)]
    pub fn tracked(&self) -> usize {
        self.clients.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

fn ended(f: &Failures, now: Instant) -> bool {
    now.checked_duration_since(f.since)
        .is_some_and(|age| age >= WINDOW)
}

/// Drops the clients whose window ended; when none did, the one whose window is oldest.
fn make_room(clients: &mut HashMap<IpAddr, Failures>, now: Instant) {
    clients.retain(|_, f| !ended(f, now));
    if clients.len() >= MAX_CLIENTS
        && let Some(oldest) = clients.iter().min_by_key(|(_, f)| f.since).map(|(k, _)| *k)
    {
        clients.remove(&oldest);
    }
}

/// The address a client is counted under: IPv4 as is, IPv6 by its /64 (an IPv4-mapped
/// IPv6 address as its IPv4 address).
fn key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    #[test]
    fn a_client_is_held_back_after_its_failures_until_the_window_ends() {
        let t = LoginThrottle::default();
        let (a, b) = (
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        );
        let start = Instant::now();
        for _ in 0..MAX_FAILURES {
            assert_eq!(t.check(a, start), Ok(()));
            t.failed(a, start);
        }
        let later = start + Duration::from_secs(20);
        assert_eq!(t.check(a, later), Err(Duration::from_secs(40)));
        assert_eq!(t.check(b, later), Ok(()), "another client is not held back");
        assert_eq!(t.check(a, start + WINDOW), Ok(()));
        t.failed(a, start + WINDOW);
        assert_eq!(t.check(a, start + WINDOW), Ok(()), "a new window");
        assert_eq!(t.tracked(), 1);
    }

    #[test]
    fn an_ipv6_client_is_its_64_and_a_mapped_ipv4_address_is_the_ipv4_one() {
        let t = LoginThrottle::default();
        let now = Instant::now();
        for i in 0..MAX_FAILURES {
            let ip: Ipv6Addr = format!("2001:db8:1:2::{i:x}").parse().unwrap();
            t.failed(IpAddr::V6(ip), now);
        }
        let same_64: Ipv6Addr = "2001:db8:1:2:ffff::1".parse().unwrap();
        assert!(t.check(IpAddr::V6(same_64), now).is_err());
        let other_64: Ipv6Addr = "2001:db8:1:3::1".parse().unwrap();
        assert!(t.check(IpAddr::V6(other_64), now).is_ok());
        let v4 = Ipv4Addr::new(192, 0, 2, 7);
        for _ in 0..MAX_FAILURES {
            t.failed(IpAddr::V6(v4.to_ipv6_mapped()), now);
        }
        assert!(t.check(IpAddr::V4(v4), now).is_err());
    }

    #[test]
    fn memory_stays_bounded_however_many_clients_fail() {
        let t = LoginThrottle::default();
        let start = Instant::now();
        for i in 0..20_000u32 {
            let now = start + Duration::from_millis(u64::from(i));
            t.failed(IpAddr::V4(Ipv4Addr::from(i)), now);
            assert!(t.tracked() <= MAX_CLIENTS);
        }
        assert_eq!(t.tracked(), MAX_CLIENTS);
        // A client still in its window keeps its count while others come and go.
        let held = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 9));
        let now = start + Duration::from_secs(200);
        for _ in 0..MAX_FAILURES {
            t.failed(held, now);
        }
        for i in 0..100u32 {
            t.failed(IpAddr::V4(Ipv4Addr::from(1_000_000 + i)), now);
        }
        assert!(t.check(held, now).is_err());
    }
}
