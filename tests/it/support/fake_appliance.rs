//! Fakes for Proxmox VE, Proxmox Backup Server and TrueNAS: small axum servers answering
//! fixed paths with documented payloads, checking the Authorization header, recording
//! requests, and able to answer everything with 403.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub struct FakeState {
    routes: HashMap<String, Value>,
    auth: String,
    forbidden_body: Value,
    pub requests: Mutex<Vec<String>>,
    pub forbidden: AtomicBool,
    /// Routes ("GET /path") answered 500, as a server whose handler failed.
    pub failing: Mutex<Vec<String>>,
}

pub struct FakeAppliance {
    pub url: String,
    pub addr: SocketAddr,
    pub state: Arc<FakeState>,
}

impl FakeAppliance {
    /// `routes` maps "GET /path" to the JSON answer; `auth` is the expected header value.
    pub async fn start(routes: Vec<(String, Value)>, auth: &str, forbidden_body: Value) -> Self {
        let state = Arc::new(FakeState {
            routes: routes.into_iter().collect(),
            auth: auth.to_string(),
            forbidden_body,
            requests: Mutex::new(Vec::new()),
            forbidden: AtomicBool::new(false),
            failing: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(handle).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            url: format!("http://{addr}"),
            addr,
            state,
        }
    }

    /// Answers `route` ("GET /path") with 500 from now on.
    pub fn fail(&self, route: &str) {
        self.state.failing.lock().unwrap().push(route.to_string());
    }

    pub fn set_forbidden(&self, on: bool) {
        self.state.forbidden.store(on, Ordering::SeqCst);
    }

    pub fn requests(&self) -> Vec<String> {
        self.state.requests.lock().unwrap().clone()
    }
}

async fn handle(
    State(state): State<Arc<FakeState>>,
    method: Method,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let key = format!("{method} {}", uri.path());
    state.requests.lock().unwrap().push(format!(
        "{method} {}",
        uri.path_and_query().map(|p| p.as_str()).unwrap_or("")
    ));
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
    if auth != Some(state.auth.as_str()) {
        return (StatusCode::UNAUTHORIZED, "authentication failure").into_response();
    }
    if state.forbidden.load(Ordering::SeqCst) {
        return (
            StatusCode::FORBIDDEN,
            axum::Json(state.forbidden_body.clone()),
        )
            .into_response();
    }
    if state.failing.lock().unwrap().contains(&key) {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            axum::Json(json!({"message": "[EFAULT] Internal error"})),
        )
            .into_response();
    }
    match state.routes.get(&key) {
        Some(v) => axum::Json(v.clone()).into_response(),
        None => (StatusCode::NOT_FOUND, format!("no route {key}")).into_response(),
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn data(v: Value) -> Value {
    json!({"data": v})
}

/// Proxmox VE: node pve1 online with VMs, a container, a template; pve2 offline.
pub fn proxmox_routes() -> Vec<(String, Value)> {
    let t = now();
    vec![
        (
            "GET /api2/json/nodes".into(),
            data(json!([
            {"node": "pve1", "status": "online", "cpu": 0.0523, "level": "", "maxcpu": 8,
             "mem": 12884901888u64, "maxmem": 33538252800u64, "disk": 8403705856u64, "maxdisk": 100861726720u64,
             "ssl_fingerprint": "AA:BB", "type": "node", "id": "node/pve1", "uptime": 864000},
            {"node": "pve2", "status": "offline", "type": "node", "id": "node/pve2"}])),
        ),
        (
            "GET /api2/json/nodes/pve1/qemu".into(),
            data(json!([
            {"vmid": 100, "name": "k3s-master", "status": "running", "uptime": 86400, "cpu": 0.031, "cpus": 4,
             "mem": 4294967296u64, "maxmem": 8589934592u64, "disk": 0, "maxdisk": 34359738368u64,
             "netin": 123456, "netout": 654321, "diskread": 1, "diskwrite": 2, "pid": 1234},
            {"vmid": 101, "name": "win11", "status": "stopped", "uptime": 0, "cpu": 0, "cpus": 4,
             "mem": 0, "maxmem": 8589934592u64, "disk": 0, "maxdisk": 68719476736u64},
            {"vmid": 9000, "name": "debian-template", "status": "stopped", "template": 1, "uptime": 0,
             "maxmem": 2147483648u64}])),
        ),
        (
            "GET /api2/json/nodes/pve1/lxc".into(),
            data(json!([
            {"vmid": "200", "name": "pihole", "status": "running", "type": "lxc", "uptime": 3600,
             "cpu": 0.004, "cpus": 1, "mem": 134217728, "maxmem": 536870912, "swap": 0, "maxswap": 536870912,
             "disk": 1073741824, "maxdisk": 8589934592u64}])),
        ),
        (
            "GET /api2/json/nodes/pve1/storage".into(),
            data(json!([
            {"storage": "local", "type": "dir", "content": "iso,vztmpl,backup", "active": 1, "enabled": 1,
             "shared": 0, "total": 100861726720u64, "used": 31436546048u64, "avail": 64253587456u64, "used_fraction": 0.3117},
            {"storage": "local-zfs", "type": "zfspool", "content": "images,rootdir", "active": 1, "enabled": 1,
             "shared": 0, "total": 1888325525504u64, "used": 1794909249536u64, "avail": 93416275968u64, "used_fraction": 0.9505}])),
        ),
        (
            "GET /api2/json/nodes/pve1/replication".into(),
            data(json!([
            {"id": "100-0", "guest": 100, "jobnum": 0, "target": "pve2", "type": "local", "schedule": "*/15",
             "source": "pve1", "vmtype": "qemu", "last_sync": t - 4 * 3600, "last_try": t - 600,
             "next_sync": t + 300, "duration": 2.5, "fail_count": 14,
             "error": "No route to host (pve2)\n"}])),
        ),
        (
            "GET /api2/json/cluster/backup".into(),
            data(json!([
            {"id": "backup-5f2c9a1e-7b3d", "type": "vzdump", "schedule": "02:00", "storage": "local",
             "mode": "snapshot", "compress": "zstd", "enabled": 1, "vmid": "100", "next-run": t + 3600,
             "mailnotification": "always", "notes-template": "{{guestname}}"}])),
        ),
        (
            "GET /api2/json/nodes/pve1/tasks".into(),
            data(json!([
            {"upid": "UPID:pve1:000A1B2C:0F3E4D5A:6741A2B0:vzdump:100:root@pam:", "node": "pve1", "pid": 662316,
             "pstart": 255741274, "starttime": t - 7200, "endtime": t - 7000, "type": "vzdump", "id": "100",
             "user": "root@pam", "status": "job errors"},
            {"upid": "UPID:pve1:000A1B2D:0F3E4D5B:6741A2B1:qmstart:101:root@pam:", "node": "pve1", "pid": 662317,
             "pstart": 255741275, "starttime": t - 3600, "endtime": t - 3590, "type": "qmstart", "id": "101",
             "user": "root@pam", "status": "OK"}])),
        ),
    ]
}

/// Proxmox Backup Server: one datastore, a fresh VM group and a stale container group.
pub fn pbs_routes() -> Vec<(String, Value)> {
    let t = now();
    vec![
        (
            "GET /api2/json/status/datastore-usage".into(),
            data(json!([
            {"store": "backup", "total": 3985729650688u64, "used": 2192151273472u64, "avail": 1793578377216u64,
             "history": [0.54, 0.55, null], "history-start": t - 2592000, "history-delta": 86400,
             "estimated-full-date": t + 90 * 86400,
             "gc-status": {"upid": "UPID:pbs:00000A1B:0000C2D3:00000001:6741B000:garbage_collection:backup:root@pam:",
                "index-file-count": 120, "index-data-bytes": 9876543210u64, "disk-bytes": 2192151273472u64,
                "disk-chunks": 812345, "removed-bytes": 1073741824u64, "removed-chunks": 512,
                "pending-bytes": 2147483648u64, "pending-chunks": 900, "removed-bad": 0, "still-bad": 0}}])),
        ),
        (
            "GET /api2/json/admin/datastore/backup/groups".into(),
            data(json!([
            {"backup-type": "vm", "backup-id": "100", "last-backup": t - 3600, "backup-count": 14,
             "files": ["qemu-server.conf.blob", "drive-scsi0.img.fidx", "index.json.blob"],
             "owner": "root@pam!pve", "comment": "k3s-master"},
            {"backup-type": "ct", "backup-id": "200", "last-backup": t - 9 * 86400, "backup-count": 3,
             "files": ["pct.conf.blob", "root.pxar.didx", "index.json.blob"], "owner": "root@pam!pve", "comment": "pihole"}])),
        ),
        (
            "GET /api2/json/nodes/localhost/tasks".into(),
            data(json!([
            {"upid": "UPID:pbs:00001234:00005678:00000000:6741C000:verificationjob:backup\\x3av\\x2d3b7f:root@pam:",
             "node": "pbs", "pid": 4660, "pstart": 22136, "starttime": t - 5400, "endtime": t - 5000,
             "worker_type": "verificationjob", "worker_id": "backup:v-3b7f", "user": "root@pam",
             "status": "verification failed - please check the log for details"},
            {"upid": "UPID:pbs:00001235:00005679:00000000:6741C100:backup:backup\\x3avm\\x2f100:root@pam!pve:",
             "node": "pbs", "pid": 4661, "pstart": 22137, "starttime": t - 3700, "endtime": t - 3600,
             "worker_type": "backup", "worker_id": "backup:vm/100", "user": "root@pam!pve", "status": "OK"}])),
        ),
    ]
}

/// TrueNAS: a degraded pool, an active and a dismissed alert, two disks (one failed SMART).
pub fn truenas_routes() -> Vec<(String, Value)> {
    let ms = now() * 1000;
    vec![
        (
            "GET /api/v2.0/pool".into(),
            json!([
            {"id": 1, "name": "tank", "guid": "14394758612353456789", "path": "/mnt/tank", "status": "DEGRADED",
             "scan": {"function": "SCRUB", "state": "FINISHED", "start_time": {"$date": ms - 86400000},
                "end_time": {"$date": ms - 80000000}, "percentage": 100.0, "bytes_to_process": 5049426657280u64,
                "bytes_processed": 5049426657280u64, "bytes_issued": 5049426657280u64, "pause": null,
                "errors": 0, "total_secs_left": null},
             "topology": {"data": [], "log": [], "cache": [], "spare": [], "special": [], "dedup": []},
             "healthy": false, "warning": false,
             "status_detail": "One or more devices are faulted in response to persistent errors.",
             "size": 7696581394432u64, "allocated": 5049426657280u64, "free": 2647154737152u64,
             "freeing": 0, "fragmentation": "12", "is_upgraded": true}]),
        ),
        (
            "GET /api/v2.0/alert/list".into(),
            json!([
            {"uuid": "a1b2", "source": "", "klass": "ZpoolCapacityWarning", "args": {"volume": "tank", "capacity": 81},
             "node": "Controller A", "key": "[\"tank\"]", "datetime": {"$date": ms - 3600000},
             "last_occurrence": {"$date": ms - 60000}, "dismissed": false, "mail": null,
             "text": "Space usage for pool \"%(volume)s\" is %(capacity)d%%.", "id": "a1b2", "level": "WARNING",
             "formatted": "Space usage for pool \"tank\" is 81%. Optimal pool performance requires used space remain below 80%.",
             "one_shot": false},
            {"uuid": "c3d4", "source": "", "klass": "VolumeStatus", "args": {"volume": "tank", "state": "DEGRADED"},
             "node": "Controller A", "key": "[\"tank\"]", "datetime": {"$date": ms - 7200000},
             "last_occurrence": {"$date": ms - 60000}, "dismissed": false, "mail": null,
             "text": "Pool %(volume)s state is %(state)s", "id": "c3d4", "level": "CRITICAL",
             "formatted": "Pool tank state is DEGRADED: One or more devices are faulted.", "one_shot": false},
            {"uuid": "e5f6", "source": "", "klass": "UPSOnBattery", "args": {}, "node": "Controller A", "key": "x",
             "datetime": {"$date": ms - 9000000}, "dismissed": true, "level": "CRITICAL",
             "formatted": "UPS is on battery", "text": "UPS is on battery", "id": "e5f6", "one_shot": true}]),
        ),
        (
            "GET /api/v2.0/disk".into(),
            json!([
            {"identifier": "{serial_lunid}ZL2ABC01_5000c500abcdef01", "name": "sda", "subsystem": "scsi", "number": 0,
             "serial": "ZL2ABC01", "lunid": "5000c500abcdef01", "size": 4000787030016u64, "description": "",
             "transfermode": "Auto", "hddstandby": "ALWAYS ON", "advpowermgmt": "DISABLED", "togglesmart": true,
             "smartoptions": "", "expiretime": null, "critical": null, "difference": null, "informational": null,
             "model": "ST4000VN008-2DR166", "rotationrate": 5980, "type": "HDD", "zfs_guid": "1234",
             "bus": "ATA", "devname": "sda", "enclosure": null, "supports_smart": true, "pool": "tank"},
            {"identifier": "{serial_lunid}ZL2ABC02_5000c500abcdef02", "name": "sdb", "subsystem": "scsi", "number": 16,
             "serial": "ZL2ABC02", "size": 4000787030016u64, "model": "ST4000VN008-2DR166", "rotationrate": 5980,
             "type": "HDD", "togglesmart": true, "devname": "sdb", "pool": "tank"}]),
        ),
        (
            "POST /api/v2.0/disk/temperatures".into(),
            json!({"sda": 41, "sdb": null}),
        ),
        (
            "GET /api/v2.0/smart/test/results".into(),
            json!([
            {"disk": "sda", "tests": [{"num": 1, "description": "Short offline", "status": "SUCCESS",
                "status_verbose": "Completed without error", "remaining": 0.0, "lifetime": 31234, "lba_of_first_error": null}]},
            {"disk": "sdb", "tests": [{"num": 1, "description": "Extended offline", "status": "FAILED",
                "status_verbose": "Completed: read failure", "remaining": 0.9, "lifetime": 41000, "lba_of_first_error": 123456}]}]),
        ),
    ]
}

/// Accepts TCP connections and completes a TLS handshake with the test certificate.
struct TlsListener {
    inner: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.inner.accept().await else {
                continue;
            };
            // A client that rejects the certificate fails the handshake: keep listening.
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

impl FakeAppliance {
    /// Like [`FakeAppliance::start`] over HTTPS with `certs/leaf-fullchain.pem` and
    /// `certs/leaf.key` (from tests/support/gen_test_certs.sh).
    pub async fn start_tls(
        routes: Vec<(String, Value)>,
        auth: &str,
        certs: &std::path::Path,
    ) -> Self {
        let chain: Vec<_> = rustls_pemfile::certs(&mut std::io::BufReader::new(
            std::fs::File::open(certs.join("leaf-fullchain.pem")).unwrap(),
        ))
        .collect::<Result<_, _>>()
        .unwrap();
        let key = rustls_pemfile::private_key(&mut std::io::BufReader::new(
            std::fs::File::open(certs.join("leaf.key")).unwrap(),
        ))
        .unwrap()
        .unwrap();
        let tls = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let state = Arc::new(FakeState {
            routes: routes.into_iter().collect(),
            auth: auth.to_string(),
            forbidden_body: json!({"data": null}),
            requests: Mutex::new(Vec::new()),
            forbidden: AtomicBool::new(false),
            failing: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(handle).with_state(state.clone());
        let inner = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = inner.local_addr().unwrap();
        let listener = TlsListener {
            inner,
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(tls)),
        };
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            url: format!("https://127.0.0.1:{}", addr.port()),
            addr,
            state,
        }
    }
}
