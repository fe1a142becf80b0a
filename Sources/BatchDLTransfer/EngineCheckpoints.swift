import CCurl
import Dispatch
import Foundation

/// Checkpoints: what reached the disk, reported close behind the network and when a run is cancelled.
extension Engine {
  /// Keeps checkpoints close behind the network: each resumable download is asked to sync every
  /// `syncInterval` ms, and what reached the disk is reported at most every 250 ms, so that a kill
  /// loses about a second of transfer at most. A sync is left out when the download should end
  /// within a quarter of the interval: its result will replace the checkpoint. (A trigger on
  /// unsynced bytes would sync without pause at loopback speeds, and cost more than it saves.)
  package func checkpoint(now: UInt64) {
    var points: [TransferCheckpoint] = []
    var downloads: [SegmentedDownload] = []
    for (job, download) in segmented {
      _ = download.applySynced()
      if now &- download.lastHash >= 20 {
        download.lastHash = now
        download.advanceHash()
      }
      let extents = download.syncedExtents
      if extents != download.reported {
        points.append(checkpoint(job, download, extents: extents))
        downloads.append(download)
      }
      if now &- download.lastSync >= syncInterval {
        download.lastSync = now
        download.requestSync(positions: download.pieces.map { $0.transfer?.fileSink?.handedOver ?? $0.next })
      }
    }
    for transfer in active.values where transfer.piece == nil {
      guard let sink = transfer.fileSink, transfer.validator != nil else { continue }
      let durable = sink.durable
      if durable > (reported[transfer.job] ?? 0), let point = checkpoint(transfer, durable: durable) {
        points.append(point)
      }
      // The first sync comes one interval after the transfer starts: a file that finishes sooner
      // never pays for one.
      guard let last = lastSync[transfer.job] else {
        lastSync[transfer.job] = now
        firstSeen[transfer.job] = (now, sink.count)
        continue
      }
      if sink.count > durable, now &- last >= syncInterval, !endsSoon(transfer, sink: sink, now: now) {
        lastSync[transfer.job] = now
        sink.requestSync()
      }
    }
    guard !points.isEmpty, now &- lastCheckpoint >= 250 else { return }
    lastCheckpoint = now
    for point in points { reported[point.job] = point.durable }
    for download in downloads { download.reported = download.syncedExtents }
    observer?.transferCheckpoints(points)
  }

  /// Whether, at its rate so far, a download of known length ends within a quarter of `syncInterval`,
  /// or before a sync started now could end (`FileSink.syncEstimate`: on a disk slower than the
  /// network, the bytes the page cache holds take that long to reach it). Either way its result
  /// replaces the checkpoint before the sync could make one, and a sync still running when the
  /// run ends would hold the process until the disk has taken every byte.
  package func endsSoon(_ transfer: Transfer, sink: FileSink, now: UInt64) -> Bool {
    guard let total = transfer.totalLength, let seen = firstSeen[transfer.job], now > seen.time else { return false }
    let rate = Double(sink.count - seen.count) / Double(now - seen.time)
    guard rate > 0 else { return false }
    return Double(total - sink.count) / rate < max(Double(syncInterval) / 4, sink.syncEstimate ?? 0)
  }

  package func checkpoint(_ transfer: Transfer, durable: Int64) -> TransferCheckpoint? {
    guard let sink = transfer.fileSink, let validator = transfer.validator, durable > 0 else { return nil }
    let head = transfer.head
    return TransferCheckpoint(
      job: transfer.job, path: sink.path, durable: durable, validator: validator, etag: head.strongETag,
      lastModified: head["last-modified"], total: transfer.totalLength,
      effectiveURL: transfer.easy.info(string: CURLINFO_EFFECTIVE_URL) ?? transfer.spec.url)
  }

  /// Stops every transfer in flight, after syncing what each wrote and reporting it as a checkpoint.
  package func abortAll() {
    var points: [TransferCheckpoint] = []
    for transfer in active.values {
      multi.remove(transfer.easy)
      // A transfer cut here was sent: the server's log has it.
      countRequests(of: transfer)
      if let piece = transfer.piece {
        // A segmented download's first stream: its buffers go to the file before the sync below.
        if let sink = transfer.fileSink {
          _ = sink.syncNow()
          piece.next = max(piece.next, min(sink.count, piece.end))
        }
        continue
      }
      if let sink = transfer.fileSink, let point = checkpoint(transfer, durable: sink.syncNow()) {
        points.append(point)
      }
    }
    for (job, download) in segmented {
      download.syncNow()
      points.append(checkpoint(job, download, extents: download.syncedExtents))
    }
    if !points.isEmpty { observer?.transferCheckpoints(points) }
    active.removeAll()
    admission.endedAll()
  }

}
