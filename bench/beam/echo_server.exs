# The BEAM side of bench/net: a gen_tcp echo server, a process per connection, raw bytes,
# passive sockets ({active, false} and :gen_tcp.recv, the usual blocking style).
#
#   elixir bench/beam/echo_server.exs [--port N]
#
# Prints "ready PORT" once listening, then serves until its standard input closes (the bench
# script holds it open and closes it to stop the server).

defmodule EchoServer do
  def main(args) do
    {opts, _, _} = OptionParser.parse(args, strict: [port: :integer])
    port = Keyword.get(opts, :port, 0)

    {:ok, listen} =
      :gen_tcp.listen(port, [
        :binary,
        packet: :raw,
        active: false,
        reuseaddr: true,
        nodelay: true,
        backlog: 1024,
        ip: {127, 0, 0, 1}
      ])

    {:ok, bound} = :inet.port(listen)
    IO.puts("ready #{bound}")
    for _ <- 1..4, do: spawn(fn -> accept(listen) end)
    # Serve until stdin closes.
    IO.read(:stdio, :eof)
    :ok
  end

  defp accept(listen) do
    case :gen_tcp.accept(listen) do
      {:ok, socket} ->
        pid = spawn(fn -> receive do: (:go -> loop(socket)) end)
        :ok = :gen_tcp.controlling_process(socket, pid)
        send(pid, :go)
        accept(listen)

      {:error, _} ->
        :ok
    end
  end

  defp loop(socket) do
    case :gen_tcp.recv(socket, 0) do
      {:ok, data} ->
        :ok = :gen_tcp.send(socket, data)
        loop(socket)

      {:error, _} ->
        :gen_tcp.close(socket)
    end
  end
end

EchoServer.main(System.argv())
