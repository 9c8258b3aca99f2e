# The key=value arguments of a recipe, as shell variables of the same names. A recipe sets its
# defaults, then sources this file with its name, the keys it takes and its arguments:
#
#   rate=500 duration=10m
#   source just/kv-args.sh soak "rate duration" "$@"
#
# An argument that is not key=value, or whose key is not listed, stops the recipe (exit status 2)
# with a message naming the keys it takes. (Recipes using it have the [positional-arguments]
# attribute, so a value may contain spaces.)
kv_recipe=$1 kv_keys=$2
shift 2
for kv_arg in "$@"; do
  kv_key=${kv_arg%%=*}
  if [[ $kv_arg != *=* || " $kv_keys " != *" $kv_key "* ]]; then
    echo "$kv_recipe: unknown argument '$kv_arg'; it takes: ${kv_keys// /= }=" >&2
    exit 2
  fi
  printf -v "$kv_key" '%s' "${kv_arg#*=}"
done
unset kv_recipe kv_keys kv_arg kv_key
