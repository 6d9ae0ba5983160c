#!/bin/sh
# Writes the man pages of a beaconctl binary, one per subcommand (beaconctl.1, beaconctl.get.1, ...), with
# swift-argument-parser's generate-manual tool (what `make manual` runs through the plugin), then adjusts them for
# man-db and lintian:
# - the NAME of beaconctl.get.1 becomes the page's name, beaconctl.get: lexgrog, which feeds whatis and apropos,
#   reads one word there; the synopsis still shows "beaconctl get";
# - a blank line in a help text becomes a paragraph break (.Pp), which groff otherwise warns about.
#
# usage: debian/beaconctl-manpages.sh BEACONCTL DATE OUTPUT-DIRECTORY   (DATE as yyyy-mm-dd)
set -eu
[ $# -eq 3 ] || { sed -n '9p' "$0" >&2; exit 2; }
beaconctl=$1 date=$2 output=$3
SWIFT=${SWIFT:-swift}
# The plugin builds the whole package before it writes pages; asked for --help, it only builds its tool.
"$SWIFT" package --allow-writing-to-package-directory generate-manual --help > /dev/null
tool="$("$SWIFT" build --show-bin-path)/generate-manual-tool"
[ -x "$tool" ] || { echo "beaconctl-manpages.sh: no generate-manual tool at $tool" >&2; exit 1; }
mkdir -p "$output"
"$tool" "$beaconctl" --multi-page --date "$date" --output-directory "$output"
for page in "$output"/beaconctl.*.1; do
    command=${page##*/beaconctl.}
    command=${command%.1}
    sed -i -e "s/^\.Nm \"beaconctl $command\"\$/.Nm beaconctl.$command/" -e "s/^\.Nm\$/.Nm \"beaconctl $command\"/" \
        "$page"
done
sed -i -e 's/^$/.Pp/' "$output"/*.1
