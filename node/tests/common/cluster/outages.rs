//! Outages of a cluster's nodes: killed, drained, frozen and thawed. The directory stops
//! routing to a node as soon as it is told to go.

use super::*;

impl Cluster {
    pub fn kill9(&mut self, id: &str) {
        self.dir.set_up(id, false);
        let i = self.index(id);
        self.nodes[i].kill9();
    }

    /// SIGTERM (the node drains); the directory stops routing to it at once.
    pub fn sigterm(&mut self, id: &str) {
        self.dir.set_up(id, false);
        self.node(id).sigterm();
    }

    /// SIGSTOP: the process freezes (its sockets stay open, unanswered).
    pub fn sigstop(&mut self, id: &str) {
        self.dir.set_up(id, false);
        self.node(id).signal(libc::SIGSTOP);
    }

    /// SIGCONT after [`Cluster::sigstop`]; the directory is left as it is.
    pub fn sigcont(&mut self, id: &str) {
        self.node(id).signal(libc::SIGCONT);
    }

    pub fn mark_up(&self, id: &str) {
        self.dir.set_up(id, true);
    }
}
