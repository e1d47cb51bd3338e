# The Elixir half of examples/cluster (started by the C++ half, which passes its node name).
#
# It registers `reporter`, which prints what the C++ workers report; calls the C++ GenServer
# `prices` and monitors it; and prints the DOWN that comes when the C++ node goes away
# (`noconnection`), then exits.
[cpp_node] = System.argv() |> Enum.map(&String.to_atom/1)

reporter = spawn(fn ->
  loop = fn loop ->
    receive do
      {:tick, worker, n} ->
        if rem(n, 5) == 0, do: IO.puts("elixir: worker #{worker} reported tick #{n}")
        loop.(loop)
    end
  end
  loop.(loop)
end)
Process.register(reporter, :reporter)

# Wait for the C++ node's `prices` server, then call it.
wait = fn wait, tries ->
  case Node.connect(cpp_node) do
    true -> :ok
    _ when tries > 0 -> Process.sleep(100); wait.(wait, tries - 1)
    _ -> raise "cannot reach #{cpp_node}"
  end
end
wait.(wait, 100)

for symbol <- ["ACME", "INITECH"] do
  {:ok, price} = GenServer.call({:prices, cpp_node}, {:quote, symbol})
  IO.puts("elixir: GenServer.call({:prices, #{cpp_node}}, {:quote, #{inspect(symbol)}}) -> #{price}")
end

ref = Process.monitor({:prices, cpp_node})
IO.puts("elixir: monitoring {:prices, #{cpp_node}}")
send({:cpp_main, cpp_node}, {:elixir_ready, self()})

receive do
  {:DOWN, ^ref, :process, who, reason} ->
    IO.puts("elixir: DOWN from #{inspect(who)}: #{inspect(reason)}")
after
  60_000 -> IO.puts("elixir: no DOWN within 60 s")
end
