# The BEAM side of spawn_delay (bench/spawn_delay): the same measurement on OTP/Elixir.
#
# A DynamicSupervisor is suspended (:sys.suspend), D client processes each call
# DynamicSupervisor.start_child (their requests queue up), the supervisor is resumed, and every
# child's init records :erlang.monotonic_time(:nanosecond). The gaps between consecutive inits
# are the per-spawn cost at that depth. Partitioned: a PartitionSupervisor of P
# DynamicSupervisors, requests routed by integer key through {:via, PartitionSupervisor, ...}.
#
#   elixir --erl "+P 4000000" bench/beam/spawn_delay.exs [--quick] [--csv FILE] [--depths D,...]
#                                     [--partitions P,...] [--backlog N]
# (+P: the default limit of 262144 processes is too low for 1M queued clients.)
#
# Output: CSV rows variant,partitions,depth,per_spawn_ns_p50,per_spawn_ns_p90,drain_s with
# variant "beam", and progress on stderr.

defmodule SpawnDelay.Child do
  use GenServer

  def start_link({times, counter, cap}), do: GenServer.start_link(__MODULE__, {times, counter, cap})

  @impl true
  def init({times, counter, cap}) do
    t = :erlang.monotonic_time(:nanosecond)
    i = :atomics.add_get(counter, 1, 1)
    if i <= cap, do: :atomics.put(times, i, t)
    {:ok, nil}
  end
end

defmodule SpawnDelay do
  @window 1000

  def main(args) do
    {opts, _, _} =
      OptionParser.parse(args,
        strict: [quick: :boolean, csv: :string, depths: :string, partitions: :string, backlog: :integer]
      )

    quick = Keyword.get(opts, :quick, false)
    depths = list(opts[:depths]) || if(quick, do: [0, 1000, 10000, 100_000], else: [0, 1000, 10000, 100_000, 300_000, 1_000_000])
    parts = list(opts[:partitions]) || if(quick, do: [1, 16], else: [1, 2, 4, 8, 16])
    backlog = opts[:backlog] || 100_000

    rows =
      for d <- depths do
        timed = cond do
          d == 0 -> if quick, do: 1000, else: 2000
          d <= 10000 -> d
          true -> @window + 1
        end
        backlog_run(1, d, timed, @window)
      end ++
        for p <- parts do
          timed = if quick and p == 1, do: 2001, else: backlog
          backlog_run(p, backlog, timed, backlog)
        end

    header = "variant,partitions,depth,per_spawn_ns_p50,per_spawn_ns_p90,drain_s\n"
    body = Enum.map_join(rows, "", &row_csv/1)
    case opts[:csv] do
      nil -> IO.write(header <> body)
      file -> File.write!(file, header <> body)
    end
  end

  defp list(nil), do: nil
  defp list(s), do: s |> String.split(",", trim: true) |> Enum.map(&String.to_integer/1)

  defp row_csv({p, d, p50, p90, drain}) do
    drain_s = if drain, do: :erlang.float_to_binary(drain, decimals: 6), else: ""
    "beam,#{p},#{d},#{round(p50)},#{round(p90)},#{drain_s}\n"
  end

  # One run: P supervisors, d requests queued while they are suspended, the first `timed`
  # inits recorded.
  defp backlog_run(partitions, d, timed, window) do
    cap = if d == 0, do: timed, else: min(timed, d)
    times = :atomics.new(max(cap, 1), signed: true)
    counter = :atomics.new(1, signed: true)
    spec = {SpawnDelay.Child, {times, counter, cap}}
    Process.flag(:trap_exit, true)

    {top, sups, target} = start_supervisors(partitions)

    release =
      if d == 0 do
        t0 = :erlang.monotonic_time(:nanosecond)
        for i <- 1..cap, do: {:ok, _} = DynamicSupervisor.start_child(target.(i), spec)
        t0
      else
        Enum.each(sups, &:sys.suspend/1)
        for i <- 1..d do
          to = target.(i)
          spawn(fn -> catch_exit(fn -> DynamicSupervisor.start_child(to, spec) end) end)
        end
        wait_queued(sups, d)
        t0 = :erlang.monotonic_time(:nanosecond)
        Enum.each(sups, &:sys.resume/1)
        wait_counter(counter, cap, partitions, d)
        t0
      end

    inits =
      for(i <- 1..cap, do: :atomics.get(times, i) - release)
      |> Enum.sort()

    Enum.each(sups, &Process.exit(&1, :kill))
    if top, do: Process.exit(top, :kill)
    flush_exits()

    gaps = tl(inits |> Enum.scan({0, 0}, fn t, {prev, _} -> {t, t - prev} end) |> Enum.map(&elem(&1, 1)))
    gaps = Enum.take(gaps, window)
    drained = d > 0 and cap == d
    {partitions, d, percentile(gaps, 50), percentile(gaps, 90), if(drained, do: List.last(inits) / 1.0e9)}
  end

  defp catch_exit(f) do
    try do
      f.()
    catch
      :exit, _ -> :ok
    end
  end

  defp start_supervisors(1) do
    {:ok, sup} = DynamicSupervisor.start_link(strategy: :one_for_one)
    {nil, [sup], fn _ -> sup end}
  end

  defp start_supervisors(p) do
    name = :"spawn_delay_#{System.unique_integer([:positive])}"
    {:ok, top} = PartitionSupervisor.start_link(child_spec: DynamicSupervisor, name: name, partitions: p)
    sups = for {_, pid, _, _} <- PartitionSupervisor.which_children(name), do: pid
    {top, sups, fn i -> {:via, PartitionSupervisor, {name, i}} end}
  end

  defp wait_queued(sups, d) do
    queued = Enum.sum(for s <- sups, do: elem(Process.info(s, :message_queue_len), 1))
    if queued < d do
      Process.sleep(5)
      wait_queued(sups, d)
    end
  end

  defp wait_counter(counter, cap, partitions, d) do
    n = :atomics.get(counter, 1)
    if n < cap do
      Process.sleep(200)
      IO.puts(:stderr, "  beam P=#{partitions} depth=#{d}: #{n}/#{cap} started")
      wait_counter(counter, cap, partitions, d)
    end
  end

  defp flush_exits do
    receive do
      {:EXIT, _, _} -> flush_exits()
    after
      0 -> :ok
    end
  end

  defp percentile([], _), do: 0
  defp percentile(list, p) do
    sorted = Enum.sort(list)
    rank = max(1, ceil(p / 100 * length(sorted)))
    Enum.at(sorted, rank - 1)
  end
end

SpawnDelay.main(System.argv())
