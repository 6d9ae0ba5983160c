// fleet-history-check FILE: runs every check of FleetHistory on a recorded history (JSON Lines, see
// History.jsonLines()) and prints the report. Exit status: 0 when no anomaly was found, 1 when one was, 2 when the
// file cannot be read.

import FleetHistory
import Foundation

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 1, let path = arguments.first, !path.hasPrefix("-") else {
    FileHandle.standardError.write(Data("usage: fleet-history-check FILE\n".utf8))
    exit(2)
}

let history: History
do {
    history = try History(contentsOf: path)
} catch {
    let reason = (error as? HistoryFormatError)?.description ?? error.localizedDescription
    FileHandle.standardError.write(Data("fleet-history-check: cannot read \(path): \(reason)\n".utf8))
    exit(2)
}

let report = HistoryReport(history: history)
print(report.table, terminator: "")
print(report.examples(limit: 5), terminator: "")
exit(report.isClean ? 0 : 1)
