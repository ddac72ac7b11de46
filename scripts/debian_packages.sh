# Sourced by the scripts that set a machine up: installs the Debian packages
# among its arguments that are missing, with one `apt-get update` first, and
# says which under the caller's name.
#
#   . scripts/debian_packages.sh
#   ensure_debian_packages setup cmake ninja-build ...
ensure_debian_packages() {
  local caller=$1 package sudo=""
  shift
  local missing=()
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  if [ "${#missing[@]}" -eq 0 ]; then return 0; fi
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "${caller}: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}
