# bash completion for loom. Commands and options are read from loom's own
# --help, so they follow the installed version without edits here.
_loom()
{
    local cur prev cmd i
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        --url) ((i++)) ;;
        -*) ;;
        *) cmd=${COMP_WORDS[i]}; break ;;
        esac
    done
    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '--url --help' -- "$cur"))
        else
            local cmds
            cmds=$("${COMP_WORDS[0]}" --help 2>/dev/null |
                sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
            COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
        fi
        return
    fi
    case $prev in
    --catalog | --data | --template | --out | --trace | --estimate | --script)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    --templates | --partials | --dir)
        COMPREPLY=($(compgen -d -- "$cur"))
        return
        ;;
    esac
    if [[ $cur == -* ]]; then
        local opts
        opts=$("${COMP_WORDS[0]}" "$cmd" --help 2>&1 | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _loom loom
