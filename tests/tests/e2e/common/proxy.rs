//! A TCP proxy of the tests' own, between the nodes of a cluster: it forwards a node's door,
//! delays some chunks and drops some connections (seeded), and can cut the node off: every
//! connection to it is then refused and those open are dropped, until it is healed.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How a proxy disturbs the connections it forwards.
#[derive(Clone, Copy)]
pub struct Chaos {
    /// Of every 1,000 chunks, how many wait `delay` first.
    pub delayed_per_mille: u64,
    pub delay: Duration,
    /// Of every 1,000 connections, how many are dropped after their first chunk.
    pub dropped_per_mille: u64,
}

pub struct Proxy {
    pub address: SocketAddr,
    target: Arc<Mutex<Option<SocketAddr>>>,
    cut: Arc<AtomicBool>,
}

impl Proxy {
    /// A proxy listening on loopback, forwarding once `forward_to` names its target.
    pub fn start(seed: u64, chaos: Chaos) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let target = Arc::new(Mutex::new(None));
        let cut = Arc::new(AtomicBool::new(false));
        let random = Arc::new(AtomicU64::new(seed));
        let (t, c) = (target.clone(), cut.clone());
        std::thread::spawn(move || {
            for incoming in listener.incoming() {
                let Ok(client) = incoming else { continue };
                let to = *t.lock().unwrap();
                let (Some(to), false) = (to, c.load(Ordering::SeqCst)) else {
                    drop(client);
                    continue;
                };
                let Ok(server) = TcpStream::connect(to) else {
                    continue;
                };
                let drop_it = next(&random) % 1000 < chaos.dropped_per_mille;
                let link = Link {
                    cut: c.clone(),
                    random: random.clone(),
                    chaos,
                    closed: Arc::new(AtomicBool::new(false)),
                };
                let (client2, server2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let forward = link.clone();
                std::thread::spawn(move || forward.pump(client, server, drop_it));
                std::thread::spawn(move || link.pump(server2, client2, false));
            }
        });
        Proxy {
            address,
            target,
            cut,
        }
    }

    pub fn forward_to(&self, to: &str) {
        *self.target.lock().unwrap() = Some(to.parse().unwrap());
    }

    /// Cuts the node off (`true`) or heals it (`false`).
    pub fn set_cut(&self, cut: bool) {
        self.cut.store(cut, Ordering::SeqCst);
    }
}

fn next(random: &AtomicU64) -> u64 {
    // SplitMix64 over a shared counter: the same seed gives the same draws in order.
    let mut z = random
        .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[derive(Clone)]
struct Link {
    cut: Arc<AtomicBool>,
    random: Arc<AtomicU64>,
    chaos: Chaos,
    /// Set when either direction ends: the other ends too.
    closed: Arc<AtomicBool>,
}

impl Link {
    fn pump(self, mut from: TcpStream, mut to: TcpStream, drop_after_first: bool) {
        let _ = from.set_read_timeout(Some(Duration::from_millis(100)));
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            if self.cut.load(Ordering::SeqCst) || self.closed.load(Ordering::SeqCst) {
                break;
            }
            match from.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => {
                    if next(&self.random) % 1000 < self.chaos.delayed_per_mille {
                        std::thread::sleep(self.chaos.delay);
                    }
                    if to.write_all(&buffer[..n]).is_err() || drop_after_first {
                        break;
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
        self.closed.store(true, Ordering::SeqCst);
        let _ = from.shutdown(std::net::Shutdown::Both);
        let _ = to.shutdown(std::net::Shutdown::Both);
    }
}
