_lbscope() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="lbscope"
                ;;
            lbscope,completions)
                cmd="lbscope__subcmd__completions"
                ;;
            lbscope,diff)
                cmd="lbscope__subcmd__diff"
                ;;
            lbscope,doctor)
                cmd="lbscope__subcmd__doctor"
                ;;
            lbscope,export)
                cmd="lbscope__subcmd__export"
                ;;
            lbscope,help)
                cmd="lbscope__subcmd__help"
                ;;
            lbscope,man)
                cmd="lbscope__subcmd__man"
                ;;
            lbscope,record)
                cmd="lbscope__subcmd__record"
                ;;
            lbscope,replay)
                cmd="lbscope__subcmd__replay"
                ;;
            lbscope,report)
                cmd="lbscope__subcmd__report"
                ;;
            lbscope,serve)
                cmd="lbscope__subcmd__serve"
                ;;
            lbscope,top)
                cmd="lbscope__subcmd__top"
                ;;
            lbscope__subcmd__help,completions)
                cmd="lbscope__subcmd__help__subcmd__completions"
                ;;
            lbscope__subcmd__help,diff)
                cmd="lbscope__subcmd__help__subcmd__diff"
                ;;
            lbscope__subcmd__help,doctor)
                cmd="lbscope__subcmd__help__subcmd__doctor"
                ;;
            lbscope__subcmd__help,export)
                cmd="lbscope__subcmd__help__subcmd__export"
                ;;
            lbscope__subcmd__help,help)
                cmd="lbscope__subcmd__help__subcmd__help"
                ;;
            lbscope__subcmd__help,man)
                cmd="lbscope__subcmd__help__subcmd__man"
                ;;
            lbscope__subcmd__help,record)
                cmd="lbscope__subcmd__help__subcmd__record"
                ;;
            lbscope__subcmd__help,replay)
                cmd="lbscope__subcmd__help__subcmd__replay"
                ;;
            lbscope__subcmd__help,report)
                cmd="lbscope__subcmd__help__subcmd__report"
                ;;
            lbscope__subcmd__help,serve)
                cmd="lbscope__subcmd__help__subcmd__serve"
                ;;
            lbscope__subcmd__help,top)
                cmd="lbscope__subcmd__help__subcmd__top"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        lbscope)
            opts="-h -V --help --version report top replay record serve diff export doctor man completions help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__completions)
            opts="-h --help bash elvish fish powershell zsh"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__diff)
            opts="-i -p -h --interval --format --json --tui --pid --comm --cgroup --cpus --missed-pull-ms --ping-pong-ms --churn-per-s --spread-ratio --spread-min-threads --spread-hold-ms --max-findings --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text json markdown" -- "${cur}"))
                    return 0
                    ;;
                --pid)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --comm)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cgroup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cpus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --missed-pull-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ping-pong-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --churn-per-s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-ratio)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-min-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-hold-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-findings)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__doctor)
            opts="-h --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__export)
            opts="-h --perfetto --jsonl --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --perfetto)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jsonl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__help)
            opts="report top replay record serve diff export doctor man completions help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__help__subcmd__completions)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__help__subcmd__diff)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__help__subcmd__doctor)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__help__subcmd__export)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__help__subcmd__man)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__help__subcmd__record)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__help__subcmd__replay)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__help__subcmd__report)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__help__subcmd__serve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__help__subcmd__top)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__man)
            opts="-h --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__record)
            opts="-o -d -q -h --output --duration --quiet --cgroup --ringbuf-mb --ringbuf-kb --attach --balancer-attach --ring --ring-mb --trigger --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cgroup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ringbuf-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ringbuf-kb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --attach)
                    COMPREPLY=($(compgen -W "auto tp-btf raw-tp" -- "${cur}"))
                    return 0
                    ;;
                --balancer-attach)
                    COMPREPLY=($(compgen -W "auto fentry kprobe" -- "${cur}"))
                    return 0
                    ;;
                --ring)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ring-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --trigger)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__replay)
            opts="-i -p -h --interval --speed --pid --comm --cgroup --cpus --missed-pull-ms --ping-pong-ms --churn-per-s --spread-ratio --spread-min-threads --spread-hold-ms --max-findings --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pid)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --comm)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cgroup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cpus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --missed-pull-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ping-pong-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --churn-per-s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-ratio)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-min-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-hold-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-findings)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__report)
            opts="-o -i -c -p -h --output --interval --count --json --synthetic --synthetic-events --synthetic-rate --validate --fold --pid --comm --cgroup --cpus --missed-pull-ms --ping-pong-ms --churn-per-s --spread-ratio --spread-min-threads --spread-hold-ms --max-findings --ringbuf-mb --ringbuf-kb --attach --balancer-attach --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -c)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --synthetic)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --synthetic-events)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --synthetic-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fold)
                    COMPREPLY=($(compgen -W "auto on off" -- "${cur}"))
                    return 0
                    ;;
                --pid)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --comm)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cgroup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cpus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --missed-pull-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ping-pong-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --churn-per-s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-ratio)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-min-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-hold-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-findings)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ringbuf-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ringbuf-kb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --attach)
                    COMPREPLY=($(compgen -W "auto tp-btf raw-tp" -- "${cur}"))
                    return 0
                    ;;
                --balancer-attach)
                    COMPREPLY=($(compgen -W "auto fentry kprobe" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__serve)
            opts="-i -p -h --listen --interval --fold --pid --comm --cgroup --cpus --missed-pull-ms --ping-pong-ms --churn-per-s --spread-ratio --spread-min-threads --spread-hold-ms --max-findings --ringbuf-mb --ringbuf-kb --attach --balancer-attach --process-latency --ring --ring-mb --trigger --dump-dir --max-dumps-per-hour --dump-dir-max-mb --dump-on-post --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fold)
                    COMPREPLY=($(compgen -W "auto on off" -- "${cur}"))
                    return 0
                    ;;
                --pid)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --comm)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cgroup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cpus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --missed-pull-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ping-pong-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --churn-per-s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-ratio)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-min-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-hold-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-findings)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ringbuf-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ringbuf-kb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --attach)
                    COMPREPLY=($(compgen -W "auto tp-btf raw-tp" -- "${cur}"))
                    return 0
                    ;;
                --balancer-attach)
                    COMPREPLY=($(compgen -W "auto fentry kprobe" -- "${cur}"))
                    return 0
                    ;;
                --process-latency)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ring)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ring-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --trigger)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dump-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-dumps-per-hour)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dump-dir-max-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        lbscope__subcmd__top)
            opts="-i -p -h --interval --demo --fold --pid --comm --cgroup --cpus --missed-pull-ms --ping-pong-ms --churn-per-s --spread-ratio --spread-min-threads --spread-hold-ms --max-findings --ringbuf-mb --ringbuf-kb --attach --balancer-attach --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fold)
                    COMPREPLY=($(compgen -W "auto on off" -- "${cur}"))
                    return 0
                    ;;
                --pid)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --comm)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cgroup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cpus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --missed-pull-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ping-pong-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --churn-per-s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-ratio)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-min-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --spread-hold-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-findings)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ringbuf-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ringbuf-kb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --attach)
                    COMPREPLY=($(compgen -W "auto tp-btf raw-tp" -- "${cur}"))
                    return 0
                    ;;
                --balancer-attach)
                    COMPREPLY=($(compgen -W "auto fentry kprobe" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _lbscope -o nosort -o bashdefault -o default lbscope
else
    complete -F _lbscope -o bashdefault -o default lbscope
fi
