//! Stopping: stop accepting, let in-flight HTTP finish, close proxied sockets with 1012 after
//! the drain period, return from [`run`](crate::run).
//!
//! What starts it is a [`ShutdownSignalWatch`]: [`Signals`] (SIGTERM, SIGQUIT, SIGINT) for the
//! binary, [`When`] (a future) for a router run inside another program, such as a test.
//!
//! pingora stops its listeners as soon as its shutdown watch turns, but then sleeps its whole
//! grace period before stopping the runtimes, and would cut sockets without a close frame. So
//! the [`Drainer`] does the work on its own clock and says when nothing is left, and `run`
//! returns then; pingora's grace period (set a little longer than `ATRIUM_ROUTER_SHUTDOWN_MS`)
//! is only the backstop. Its listeners close as their services see the watch turn, on their
//! own runtimes, a moment later than the drainer may: `run` also waits until every service
//! has stopped listening ([`Listening`]), so nothing answers on the router's ports once it
//! has returned.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pingora::apps::ServerApp;
use pingora::protocols::Stream;
use pingora::server::{ShutdownSignal, ShutdownSignalWatch, ShutdownWatch};
use pingora::services::background::BackgroundService;
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;

use crate::sockets::Tracker;

/// How often the drainer looks at what is left.
const POLL: Duration = Duration::from_millis(20);

/// SIGTERM and SIGQUIT drain gracefully; SIGINT stops at once.
pub struct Signals;

#[async_trait]
impl ShutdownSignalWatch for Signals {
    async fn recv(&self) -> ShutdownSignal {
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        let mut quit = signal(SignalKind::quit()).expect("SIGQUIT handler");
        let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
        tokio::select! {
            _ = term.recv() => ShutdownSignal::GracefulTerminate,
            _ = quit.recv() => ShutdownSignal::GracefulTerminate,
            _ = int.recv() => ShutdownSignal::FastShutdown,
        }
    }
}

/// A graceful stop (as SIGTERM) once a future completes.
pub struct When(Mutex<Option<Pin<Box<dyn Future<Output = ()> + Send>>>>);

impl When {
    pub fn new(signal: impl Future<Output = ()> + Send + 'static) -> Box<Self> {
        Box::new(When(Mutex::new(Some(Box::pin(signal)))))
    }
}

#[async_trait]
impl ShutdownSignalWatch for When {
    async fn recv(&self) -> ShutdownSignal {
        let signal = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        match signal {
            Some(signal) => {
                signal.await;
                ShutdownSignal::GracefulTerminate
            }
            None => std::future::pending().await,
        }
    }
}

/// How many of the router's services still listen on their ports.
pub struct Listening(AtomicUsize);

impl Listening {
    /// None listening yet: each [`Self::app`] counts one.
    pub fn new() -> Arc<Self> {
        Arc::new(Self(AtomicUsize::new(0)))
    }

    /// Wraps a service's `app` so it counts as listening until the service has stopped
    /// (pingora cleans an app up after its accept loops have ended and dropped their
    /// listeners).
    pub fn app<A>(self: &Arc<Self>, app: A) -> Listens<A> {
        self.0.fetch_add(1, Ordering::AcqRel);
        Listens {
            app: Arc::new(app),
            listening: self.clone(),
        }
    }

    pub fn services(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
}

/// A service's app, told to [`Listening`] when its service no longer listens.
pub struct Listens<A> {
    app: Arc<A>,
    listening: Arc<Listening>,
}

#[async_trait]
impl<A: ServerApp + Send + Sync + 'static> ServerApp for Listens<A> {
    async fn process_new(
        self: &Arc<Self>,
        stream: Stream,
        shutdown: &ShutdownWatch,
    ) -> Option<Stream> {
        self.app.process_new(stream, shutdown).await
    }

    async fn cleanup(&self) {
        // Counted as stopped even if the app's own cleanup panics.
        struct Stopped<'a>(&'a Listening);
        impl Drop for Stopped<'_> {
            fn drop(&mut self) {
                self.0 .0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _stopped = Stopped(&self.listening);
        self.app.cleanup().await;
    }
}

/// The background service that drains the router once shutdown starts.
pub struct Drainer {
    pub tracker: Arc<Tracker>,
    pub listening: Arc<Listening>,
    pub drain: Duration,
    pub limit: Duration,
    /// Told once the drain is over.
    pub done: Mutex<mpsc::Sender<()>>,
}

#[async_trait]
impl BackgroundService for Drainer {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        while !*shutdown.borrow() {
            if shutdown.changed().await.is_err() {
                return;
            }
        }
        let started = Instant::now();
        let t = &self.tracker;
        tracing::info!(
            sockets = t.sockets(),
            requests = t.requests(),
            drain_ms = self.drain.as_millis() as u64,
            "shutting down: no new connections; sockets close with 1012 after the drain period"
        );
        // Sockets keep working through the drain period (nothing to wait for if none is open).
        while started.elapsed() < self.drain && (t.sockets() > 0 || t.requests() > 0) {
            tokio::time::sleep(POLL).await;
        }
        let closed = t.close_all();
        tracing::info!(closed, "proxied sockets closed with 1012");
        while started.elapsed() < self.limit && (t.sockets() > 0 || t.requests() > 0) {
            tokio::time::sleep(POLL).await;
        }
        while started.elapsed() < self.limit && self.listening.services() > 0 {
            tokio::time::sleep(POLL).await;
        }
        tracing::info!(
            sockets = t.sockets(),
            requests = t.requests(),
            listening = self.listening.services(),
            after_ms = started.elapsed().as_millis() as u64,
            "shutdown complete"
        );
        let _ = self.done.lock().unwrap_or_else(|p| p.into_inner()).send(());
    }
}
