//! A client's connection, watched while its statement runs: a client that hangs up stops its
//! statement instead of leaving it to run for nobody.

use std::future::Future;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use pondra_cluster::{Session, StopReason};

/// The state of an open TCP connection in `tcp_info` (Linux's `TCP_ESTABLISHED`).
const TCP_ESTABLISHED: u8 = 1;

/// How often a running statement's connection is checked.
const WATCH_EVERY: Duration = Duration::from_millis(100);

/// The socket of a client's TCP connection. Only read while a request of that connection is
/// being answered, when the connection (and so the descriptor) is certainly open.
#[derive(Clone, Copy, Debug)]
pub struct ClientSocket(RawFd);

impl ClientSocket {
    pub fn of(stream: &tokio::net::TcpStream) -> ClientSocket {
        ClientSocket(stream.as_raw_fd())
    }

    /// True once the peer has closed its end or reset the connection.
    pub fn closed(&self) -> bool {
        // SAFETY: `tcp_info` is plain data, filled by the kernel up to `length` bytes; the
        // descriptor is a TCP socket this process holds open (see the type's comment).
        unsafe {
            let mut info: libc::tcp_info = std::mem::zeroed();
            let mut length = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
            let read = libc::getsockopt(
                self.0,
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                (&mut info as *mut libc::tcp_info).cast(),
                &mut length,
            );
            read == 0 && info.tcpi_state != TCP_ESTABLISHED
        }
    }
}

impl
    axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, tokio::net::TcpListener>>
    for ClientSocket
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, tokio::net::TcpListener>) -> Self {
        // Answers go out at once: with Nagle's algorithm a small answer waits for the client's
        // delayed ACK of the one before, tens of milliseconds on a cluster's HTTP calls.
        let _ = stream.io().set_nodelay(true);
        ClientSocket::of(stream.io())
    }
}

/// Awaits `work` (a statement of `session`), stopping the statement if the client behind
/// `socket` hangs up meanwhile; `work` then ends at the statement's next check.
pub async fn watched<T>(
    work: impl Future<Output = T>,
    session: &Session,
    socket: Option<ClientSocket>,
) -> T {
    let Some(socket) = socket else {
        return work.await;
    };
    tokio::pin!(work);
    let mut ticks = tokio::time::interval(WATCH_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stopped = false;
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = ticks.tick(), if !stopped => {
                if socket.closed() {
                    session.stop_running(StopReason::ClientGone);
                    stopped = true;
                }
            }
        }
    }
}
